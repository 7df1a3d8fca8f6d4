package quarry.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.github.luben.zstd.ZstdInputStream;
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.SegmentInfos;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Terms;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Version;

/**
 * Lucene side of the quarry benchmark suite. One jar, several subcommands; every result is one
 * JSON object per line on stdout, logs go to stderr.
 */
public final class LuceneBench {

  static final String ENGINE = "lucene";
  static final PrintStream OUT =
      new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

  /** A pre-loaded corpus document. */
  record Doc(int id, String title, String body) {}

  /** A benchmark / oracle query as read from a JSONL file. */
  /** A query of a queries file; {@code modes} (null = all) limits the modes it runs in. */
  record QuerySpec(String query, String kind, String name, List<String> modes) {
    QuerySpec(String query, String kind, String name) {
      this(query, kind, name, null);
    }

    boolean runsIn(String mode) {
      return modes == null || modes.contains(mode);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help") || args[0].equals("help")) {
      usage();
      System.exit(args.length == 0 ? 2 : 0);
    }
    String cmd = args[0];
    Args a = new Args(Arrays.copyOfRange(args, 1, args.length));
    switch (cmd) {
      case "index" -> cmdIndex(a);
      case "query" -> cmdQuery(a);
      case "coldstart" -> cmdColdstart(a);
      case "merge" -> cmdMerge(a);
      case "oracle" -> cmdOracle(a);
      case "oracle-structured" -> LuceneStructured.cmd(a);
      case "oracle-dsl" -> LuceneDsl.cmd(a);
      case "structured-bench" -> LuceneStructuredBench.cmd(a);
      case "ops" -> LuceneOps.cmdOps(a);
      case "probe" -> LuceneProbe.cmdProbe(a);
      case "vectors" -> LuceneVectors.cmd(a);
      default -> {
        System.err.println("unknown subcommand: " + cmd);
        usage();
        System.exit(2);
      }
    }
  }

  static void usage() {
    System.err.println(
        """
        usage: java -jar lucene-bench.jar SUBCOMMAND [options]
          index     --input DOCS.jsonl[.zst|.gz] --index DIR [--threads N] [--ram-buffer-mb MB] [--force-merge K]
                    [--warmup-runs R]
          query     --index DIR --queries Q.jsonl [--modes top10,top10_count,count] [--warmup W] [--iters I]
                    [--global-warmup-rounds R] [--default-field body] [--query-cache off|default]
                    [--directory default|mmap|niofs]
          coldstart --index DIR --query "..." [--default-field body] [--directory default|mmap|niofs]
          probe     --index DIR --queries Q.jsonl [--mode top10|top10_count|count] [--rounds R]
                    [--deadline-ms MS] [--directory default|mmap|niofs]   (I/O study: round-robin runs)
          merge     --index DIR [--max-segments K]   (forceMerge(K), default 1, then commit)
          oracle    --input DOCS.jsonl[.zst|.gz] --queries-set NAME=FILE [--queries-set NAME=FILE ...]
                    --out FILE [--index DIR]
          oracle-dsl --input DOCS.jsonl[.zst|.gz] --queries-set NAME=FILE [...] --out FILE [--explain N]
                    (Elasticsearch DSL queries and explanations: see LuceneDsl.java)
          oracle-structured --input DOCS.jsonl[.zst|.gz] --queries Q.jsonl --out FILE [--index DIR]
                    (ranges and sorts on id, date, topics: see LuceneStructured.java)
          structured-bench --data DIR --index DIR --queries SPECS.jsonl [--warmup W] [--iters I]
                    (quarry-bench structured: see LuceneStructuredBench.java)
          ops       --input DOCS.jsonl[.zst|.gz] --script OPS.jsonl --queries Q.jsonl --index DIR
                    [--modes top10,top10_count,count]   (replay adds/deletes/updates, answer queries)
        """);
  }

  // ---------------------------------------------------------------- index

  static void cmdIndex(Args a) throws Exception {
    Path input = Paths.get(a.req("--input"));
    Path indexDir = Paths.get(a.req("--index"));
    int threads = a.intOpt("--threads", 1);
    double ramBufferMb = a.doubleOpt("--ram-buffer-mb", IndexWriterConfig.DEFAULT_RAM_BUFFER_SIZE_MB);
    int forceMerge = a.intOpt("--force-merge", 0);
    int warmupRuns = a.intOpt("--warmup-runs", 0);
    a.done();
    if (threads < 1) throw new IllegalArgumentException("--threads must be >= 1");

    log("loading %s", input);
    long l0 = System.nanoTime();
    List<Doc> docs = loadDocs(input);
    log("loaded %d docs in %.2f s", docs.size(), (System.nanoTime() - l0) / 1e9);
    Files.createDirectories(indexDir);
    System.gc();

    // Optional untimed JIT warm-up: index the same docs into throwaway directories first.
    for (int r = 0; r < warmupRuns; r++) {
      Path tmp = Files.createTempDirectory(indexDir.toAbsolutePath().getParent(), "warmup-index-");
      try {
        long w0 = System.nanoTime();
        buildIndex(tmp, docs, threads, ramBufferMb);
        log("warm-up run %d: %.3f s", r + 1, (System.nanoTime() - w0) / 1e9);
      } finally {
        deleteRecursively(tmp);
      }
    }
    System.gc();

    // ---- timed region: IndexWriter open + addDocument of pre-loaded docs + commit + close
    long t0 = System.nanoTime();
    long tOpen, tAdd, tCommit;
    try (Directory dir = FSDirectory.open(indexDir)) {
      IndexWriterConfig iwc = new IndexWriterConfig(new StandardAnalyzer());
      iwc.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
      iwc.setRAMBufferSizeMB(ramBufferMb);
      IndexWriter w = new IndexWriter(dir, iwc);
      int n = docs.size();
      Thread[] ts = new Thread[threads];
      AtomicReference<Throwable> failure = new AtomicReference<>();
      for (int t = 0; t < threads; t++) {
        final int from = (int) ((long) n * t / threads);
        final int to = (int) ((long) n * (t + 1) / threads);
        ts[t] =
            new Thread(
                () -> {
                  try {
                    for (int i = from; i < to; i++) {
                      w.addDocument(toLucene(docs.get(i)));
                    }
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                },
                "indexer-" + t);
      }
      tOpen = System.nanoTime();
      for (Thread t : ts) t.start();
      for (Thread t : ts) t.join();
      if (failure.get() != null) throw new RuntimeException("indexing thread failed", failure.get());
      tAdd = System.nanoTime();
      w.commit();
      tCommit = System.nanoTime();
      w.close();
    }
    long t1 = System.nanoTime();
    // ---- end of timed region
    log("timed %.3f s: open %.3f, addDocument %.3f, commit %.3f, close %.3f",
        (t1 - t0) / 1e9, (tOpen - t0) / 1e9, (tAdd - tOpen) / 1e9, (tCommit - tAdd) / 1e9, (t1 - tCommit) / 1e9);

    double seconds = (t1 - t0) / 1e9;
    long indexBytes;
    int segments;
    try (Directory dir = FSDirectory.open(indexDir)) {
      segments = SegmentInfos.readLatestCommit(dir).size();
    }
    indexBytes = dirBytes(indexDir);
    Json j = new Json();
    j.str("engine", ENGINE).str("op", "index").num("threads", threads).num("docs", docs.size());
    j.dbl("seconds", seconds, 6).dbl("docs_per_sec", docs.size() / seconds, 1);
    j.num("index_bytes", indexBytes).num("segments", segments);
    j.dbl("ram_buffer_mb", ramBufferMb, 3).num("warmup_runs", warmupRuns);
    long peakRssBeforeMerge = peakRssBytes();
    if (forceMerge > 0) {
      long m0 = System.nanoTime();
      try (Directory dir = FSDirectory.open(indexDir);
          IndexWriter w =
              new IndexWriter(
                  dir,
                  new IndexWriterConfig(new StandardAnalyzer())
                      .setOpenMode(IndexWriterConfig.OpenMode.APPEND))) {
        w.forceMerge(forceMerge);
        w.commit();
      }
      double mergeSeconds = (System.nanoTime() - m0) / 1e9;
      int segs;
      try (Directory dir = FSDirectory.open(indexDir)) {
        segs = SegmentInfos.readLatestCommit(dir).size();
      }
      j.num("force_merge", forceMerge).dbl("force_merge_seconds", mergeSeconds, 6);
      j.num("index_bytes_after_merge", dirBytes(indexDir)).num("segments_after_merge", segs);
    }
    j.num("peak_rss_bytes", peakRssBeforeMerge);
    j.str("timed", "IndexWriter open + addDocument of pre-loaded docs + commit + close");
    OUT.println(j.end());
  }

  // ---------------------------------------------------------------- merge

  /** Force-merges an existing index to at most K segments (IndexWriter.forceMerge) and commits. */
  static void cmdMerge(Args a) throws Exception {
    Path indexDir = Paths.get(a.req("--index"));
    int maxSegments = a.intOpt("--max-segments", 1);
    a.done();
    if (maxSegments < 1) throw new IllegalArgumentException("--max-segments must be >= 1");
    int before;
    try (Directory dir = FSDirectory.open(indexDir)) {
      before = SegmentInfos.readLatestCommit(dir).size();
    }
    long m0 = System.nanoTime();
    try (Directory dir = FSDirectory.open(indexDir);
        IndexWriter w =
            new IndexWriter(
                dir,
                new IndexWriterConfig(new StandardAnalyzer())
                    .setOpenMode(IndexWriterConfig.OpenMode.APPEND))) {
      w.forceMerge(maxSegments);
      w.commit();
    }
    double seconds = (System.nanoTime() - m0) / 1e9;
    int after;
    try (Directory dir = FSDirectory.open(indexDir)) {
      after = SegmentInfos.readLatestCommit(dir).size();
    }
    Json j = new Json();
    j.str("engine", ENGINE).str("op", "merge").num("max_segments", maxSegments);
    j.num("segments_before", before).num("segments_after", after).dbl("seconds", seconds, 6);
    j.num("index_bytes", dirBytes(indexDir));
    j.str("how", "IndexWriter(APPEND).forceMerge(" + maxSegments + ") + commit + close");
    OUT.println(j.end());
  }

  /** Same work as the timed region (used for untimed warm-up runs). */
  static void buildIndex(Path indexDir, List<Doc> docs, int threads, double ramBufferMb) throws Exception {
    try (Directory dir = FSDirectory.open(indexDir)) {
      IndexWriterConfig iwc = new IndexWriterConfig(new StandardAnalyzer());
      iwc.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
      iwc.setRAMBufferSizeMB(ramBufferMb);
      try (IndexWriter w = new IndexWriter(dir, iwc)) {
        int n = docs.size();
        Thread[] ts = new Thread[threads];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int t = 0; t < threads; t++) {
          final int from = (int) ((long) n * t / threads);
          final int to = (int) ((long) n * (t + 1) / threads);
          ts[t] = new Thread(() -> {
            try {
              for (int i = from; i < to; i++) w.addDocument(toLucene(docs.get(i)));
            } catch (Throwable e) {
              failure.compareAndSet(null, e);
            }
          });
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        if (failure.get() != null) throw new RuntimeException("indexing thread failed", failure.get());
        w.commit();
      }
    }
  }

  static Document toLucene(Doc d) {
    Document doc = new Document();
    doc.add(new StoredField("id", d.id));
    if (d.title != null) doc.add(new TextField("title", d.title, Field.Store.YES));
    if (d.body != null) doc.add(new TextField("body", d.body, Field.Store.YES));
    return doc;
  }

  static long dirBytes(Path dir) throws IOException {
    long total = 0;
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        if (Files.isRegularFile(p)) total += Files.size(p);
      }
    }
    return total;
  }

  // ---------------------------------------------------------------- query

  static final String[] ALL_MODES = {"top10", "top10_count", "count", "top10_highlight"};

  /** Sink for results so the JIT cannot drop the searches. */
  static long blackhole;

  static void cmdQuery(Args a) throws Exception {
    Path indexDir = Paths.get(a.req("--index"));
    Path queriesFile = Paths.get(a.req("--queries"));
    String[] modes = a.opt("--modes", String.join(",", ALL_MODES)).split(",");
    int warmup = a.intOpt("--warmup", 300);
    int iters = a.intOpt("--iters", 1000);
    int globalRounds = a.intOpt("--global-warmup-rounds", 10);
    String defaultField = a.opt("--default-field", "body");
    String queryCache = a.opt("--query-cache", "off");
    String dirKind = a.opt("--directory", "default");
    a.done();
    for (String m : modes) {
      if (!Arrays.asList(ALL_MODES).contains(m)) throw new IllegalArgumentException("unknown mode " + m);
    }

    List<QuerySpec> specs = loadQueries(queriesFile);
    try (Directory dir = LuceneProbe.openDir(indexDir, dirKind);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader); // no executor: single-threaded
      if (queryCache.equals("off")) {
        searcher.setQueryCache(null);
      } else if (!queryCache.equals("default")) {
        throw new IllegalArgumentException("--query-cache must be off or default");
      }
      StoredFields stored = searcher.storedFields();
      List<Query> queries = new ArrayList<>();
      for (QuerySpec s : specs) queries.add(parse(s.query, defaultField));
      log(
          "index %s: %d docs, %d segments; %d queries; modes %s; global warm-up %d rounds, per-query warm-up %d, iters %d; query cache %s",
          indexDir, reader.numDocs(), reader.leaves().size(), queries.size(), String.join(",", modes),
          globalRounds, warmup, iters, queryCache);

      LuceneHighlight hl = new LuceneHighlight(searcher, defaultField);
      // Global round-robin warm-up so the JIT sees the whole query mix.
      long g0 = System.nanoTime();
      for (int r = 0; r < globalRounds; r++) {
        for (int qi = 0; qi < queries.size(); qi++) {
          for (String m : modes) {
            if (specs.get(qi).runsIn(m)) blackhole += runOnce(searcher, hl, queries.get(qi), m);
          }
        }
      }
      log("global warm-up: %d executions in %.2f s",
          (long) globalRounds * queries.size() * modes.length, (System.nanoTime() - g0) / 1e9);

      long[] times = new long[iters];
      for (int qi = 0; qi < queries.size(); qi++) {
        Query q = queries.get(qi);
        QuerySpec s = specs.get(qi);
        for (String m : modes) {
          if (!s.runsIn(m)) continue;
          for (int i = 0; i < warmup; i++) blackhole += runOnce(searcher, hl, q, m);
          TopDocs lastTop = null;
          int lastCount = -1;
          for (int i = 0; i < iters; i++) {
            switch (m) {
              case "top10" -> {
                long t0 = System.nanoTime();
                TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
                long t1 = System.nanoTime();
                times[i] = t1 - t0;
                blackhole += td.totalHits.value() + (td.scoreDocs.length > 0 ? td.scoreDocs[0].doc : 0);
                lastTop = td;
              }
              case "top10_count" -> {
                long t0 = System.nanoTime();
                TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, Integer.MAX_VALUE));
                long t1 = System.nanoTime();
                times[i] = t1 - t0;
                blackhole += td.totalHits.value() + (td.scoreDocs.length > 0 ? td.scoreDocs[0].doc : 0);
                lastTop = td;
              }
              case "top10_highlight" -> {
                long t0 = System.nanoTime();
                TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
                blackhole += hl.highlight(q, td);
                long t1 = System.nanoTime();
                times[i] = t1 - t0;
                lastTop = td;
              }
              default -> {
                long t0 = System.nanoTime();
                int c = searcher.count(q);
                long t1 = System.nanoTime();
                times[i] = t1 - t0;
                blackhole += c;
                lastCount = c;
              }
            }
          }
          Json j = new Json();
          j.str("engine", ENGINE).str("op", "query").str("query", s.query).str("class", s.kind);
          if (s.name != null) j.str("name", s.name);
          j.str("mode", m);
          if (lastTop != null) {
            j.num("hits", lastTop.totalHits.value());
            j.str("hits_relation",
                lastTop.totalHits.relation() == TotalHits.Relation.EQUAL_TO ? "eq" : "gte");
          } else {
            j.num("hits", lastCount).str("hits_relation", "eq");
          }
          addLatencies(j, times, iters);
          j.num("iters", iters).num("warmup", warmup);
          if (lastTop != null) j.raw("top", topJson(lastTop, stored, false));
          OUT.println(j.end());
        }
      }
    }
    log("blackhole %d", blackhole);
  }

  static long runOnce(IndexSearcher searcher, LuceneHighlight hl, Query q, String mode)
      throws IOException {
    switch (mode) {
      case "top10_highlight" -> {
        TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
        return hl.highlight(q, td);
      }
      case "top10" -> {
        TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
        return td.totalHits.value() + (td.scoreDocs.length > 0 ? td.scoreDocs[0].doc : 0);
      }
      case "top10_count" -> {
        TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, Integer.MAX_VALUE));
        return td.totalHits.value() + (td.scoreDocs.length > 0 ? td.scoreDocs[0].doc : 0);
      }
      default -> {
        return searcher.count(q);
      }
    }
  }

  static void addLatencies(Json j, long[] times, int n) {
    long[] t = Arrays.copyOf(times, n);
    Arrays.sort(t);
    double sum = 0;
    for (long x : t) sum += x;
    j.dbl("p50_us", pct(t, 0.50) / 1e3, 3);
    j.dbl("p90_us", pct(t, 0.90) / 1e3, 3);
    j.dbl("p99_us", pct(t, 0.99) / 1e3, 3);
    j.dbl("mean_us", sum / n / 1e3, 3);
    j.dbl("min_us", t[0] / 1e3, 3);
  }

  /** Nearest-rank percentile of a sorted array. */
  static long pct(long[] sorted, double p) {
    int idx = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
  }

  static Query parse(String q, String defaultField) throws Exception {
    QueryParser qp = new QueryParser(defaultField, new StandardAnalyzer());
    qp.setDefaultOperator(QueryParser.Operator.OR);
    return qp.parse(q);
  }

  /** [{"id":..,"score":..},...]; scores printed like Java's Float.toString. */
  static String topJson(TopDocs td, StoredFields stored, boolean oracle) throws IOException {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < td.scoreDocs.length; i++) {
      ScoreDoc sd = td.scoreDocs[i];
      if (i > 0) sb.append(',');
      int id = stored.document(sd.doc).getField("id").numericValue().intValue();
      sb.append("{\"id\":").append(id).append(",\"score\":").append(Float.toString(sd.score)).append('}');
    }
    return sb.append(']').toString();
  }

  // ---------------------------------------------------------------- coldstart

  static void cmdColdstart(Args a) throws Exception {
    // Start the clock before anything else of ours runs; Lucene classes load inside the window.
    long t0 = System.nanoTime();
    Path indexDir = Paths.get(a.req("--index"));
    String qs = a.req("--query");
    String defaultField = a.opt("--default-field", "body");
    String dirKind = a.opt("--directory", "default");
    a.done();
    long hits;
    String relation;
    String top;
    long t1;
    long wallAtResultMs;
    try (Directory dir = LuceneProbe.openDir(indexDir, dirKind);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      Query q = parse(qs, defaultField);
      TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
      top = topJson(td, searcher.storedFields(), false); // the result includes the stored ids
      t1 = System.nanoTime();
      wallAtResultMs = System.currentTimeMillis();
      hits = td.totalHits.value();
      relation = td.totalHits.relation() == TotalHits.Relation.EQUAL_TO ? "eq" : "gte";
    }
    // Only now touch the management API (it costs class loading of its own).
    long jvmStartMs = ManagementFactory.getRuntimeMXBean().getStartTime();
    long[] stat = procSelfStat();
    Json j = new Json();
    j.str("engine", ENGINE).str("op", "coldstart").str("query", qs);
    j.dbl("open_to_first_result_us", (t1 - t0) / 1e3, 1);
    j.num("jvm_start_to_first_result_us", (wallAtResultMs - jvmStartMs) * 1000L);
    j.num("peak_rss_bytes", peakRssBytes());
    j.num("major_faults", stat[0]).num("minor_faults", stat[1]);
    j.num("hits", hits).str("hits_relation", relation);
    j.raw("top", top);
    OUT.println(j.end());
  }

  /** {majflt, minflt} from /proc/self/stat (fields 12 and 10, 1-based). */
  static long[] procSelfStat() {
    try {
      String s = Files.readString(Paths.get("/proc/self/stat"));
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      // f[0] is field 3 (state); field k is f[k-3]
      return new long[] {Long.parseLong(f[12 - 3]), Long.parseLong(f[10 - 3])};
    } catch (Exception e) {
      return new long[] {-1, -1};
    }
  }

  static long peakRssBytes() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) {
          String[] p = line.substring(6).trim().split("\\s+");
          return Long.parseLong(p[0]) * 1024L;
        }
      }
    } catch (Exception e) {
      // not Linux
    }
    return -1;
  }

  // ---------------------------------------------------------------- oracle

  static void cmdOracle(Args a) throws Exception {
    Path input = Paths.get(a.req("--input"));
    List<String> sets = a.multi("--queries-set");
    Path out = Paths.get(a.req("--out"));
    String indexOpt = a.opt("--index", null);
    a.done();
    if (sets.isEmpty()) throw new IllegalArgumentException("at least one --queries-set NAME=FILE");

    List<Doc> docs = loadDocs(input);
    log("loaded %d docs", docs.size());
    Path indexDir = indexOpt != null ? Paths.get(indexOpt) : Files.createTempDirectory("lucene-oracle-");
    try {
      StringBuilder sb = new StringBuilder();
      try (Directory dir = FSDirectory.open(indexDir)) {
        writeOneSegment(dir, new StandardAnalyzer(), docs.stream().map(LuceneBench::toLucene).toList());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = oneSegmentSearcher(reader);
          StoredFields stored = searcher.storedFields();
          for (int i = 0; i < docs.size(); i++) {
            int id = stored.document(i).getField("id").numericValue().intValue();
            if (id != docs.get(i).id) throw new IllegalStateException("doc order != file order at " + i);
          }
          sb.append(statsLine(reader)).append('\n');

          for (String set : sets) {
            int eq = set.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("--queries-set wants NAME=FILE: " + set);
            String setName = set.substring(0, eq);
            for (QuerySpec s : loadQueries(Paths.get(set.substring(eq + 1)))) {
              Query q = parse(s.query, "body");
              int hits = searcher.count(q);
              TopDocs td = searcher.search(q, 10);
              Json j = new Json();
              j.str("type", "query").str("set", setName).str("kind", s.kind);
              if (s.name != null) j.str("name", s.name);
              j.str("query", s.query).str("parsed", q.toString()).num("hits", hits);
              j.raw("top", topJson(td, stored, true));
              sb.append(j.end()).append('\n');
            }
          }
        }
      }
      if (out.getParent() != null) Files.createDirectories(out.getParent());
      Files.writeString(out, sb.toString(), StandardCharsets.UTF_8);
      log("wrote %s", out);
    } finally {
      if (indexOpt == null) deleteRecursively(indexDir);
    }
  }

  /**
   * Writes {@code docs} into one segment whose doc ids are their order: one thread, and
   * LogByteSizeMergePolicy only ever merges adjacent segments, so after forceMerge(1) doc id i is
   * the i-th document (ties in score break by file order, as quarry's do).
   */
  static void writeOneSegment(Directory dir, org.apache.lucene.analysis.Analyzer analyzer, List<Document> docs)
      throws IOException {
    IndexWriterConfig iwc = new IndexWriterConfig(analyzer);
    iwc.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
    iwc.setMergePolicy(new LogByteSizeMergePolicy());
    try (IndexWriter w = new IndexWriter(dir, iwc)) {
      for (Document d : docs) w.addDocument(d);
      w.forceMerge(1);
      w.commit();
    }
  }

  /** A searcher of an index {@link #writeOneSegment} wrote (refused if it has more segments). */
  static IndexSearcher oneSegmentSearcher(DirectoryReader reader) {
    if (reader.leaves().size() != 1) throw new IllegalStateException("expected 1 segment");
    return new IndexSearcher(reader);
  }

  /** The oracle files' first line: Lucene's version and the title and body statistics. */
  static String statsLine(DirectoryReader reader) throws IOException {
    Json st = new Json();
    st.str("type", "stats").str("lucene", Version.LATEST.toString());
    st.str("analyzer", "StandardAnalyzer()").num("docs", reader.numDocs());
    for (String field : new String[] {"title", "body"}) {
      Terms t = MultiTerms.getTerms(reader, field);
      Json fj = new Json();
      fj.num("docCount", t.getDocCount()).num("sumTotalTermFreq", t.getSumTotalTermFreq());
      fj.num("sumDocFreq", t.getSumDocFreq()).num("uniqueTerms", t.size());
      st.raw(field, fj.end());
    }
    return st.end();
  }

  static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) return;
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(x);
    }
  }

  // ---------------------------------------------------------------- input

  static BufferedReader openText(Path p) throws IOException {
    InputStream in = new BufferedInputStream(Files.newInputStream(p), 1 << 16);
    String name = p.getFileName().toString();
    if (name.endsWith(".zst") || name.endsWith(".zstd")) {
      try {
        in = new BufferedInputStream(new ZstdInputStream(in), 1 << 16);
      } catch (Throwable e) { // zstd-jni has no native library for this platform: use the zstd CLI
        in.close();
        log("zstd-jni unavailable (%s); falling back to `zstd -dc`", e);
        Process proc =
            new ProcessBuilder("zstd", "-dc", p.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        in = new BufferedInputStream(proc.getInputStream(), 1 << 16);
      }
    } else if (name.endsWith(".gz")) {
      in = new BufferedInputStream(new GZIPInputStream(in, 1 << 16), 1 << 16);
    }
    return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
  }

  static final JsonFactory JSON = new JsonFactory();

  static List<Doc> loadDocs(Path p) throws IOException {
    List<Doc> docs = new ArrayList<>();
    try (BufferedReader r = openText(p)) {
      String line;
      int lineNo = 0;
      while ((line = r.readLine()) != null) {
        lineNo++;
        if (line.isBlank()) continue;
        Map<String, Object> m = parseFlat(line);
        Object id = m.get("id");
        if (!(id instanceof Number)) throw new IOException(p + ":" + lineNo + ": missing integer id");
        docs.add(new Doc(((Number) id).intValue(), (String) m.get("title"), (String) m.get("body")));
      }
    }
    return docs;
  }

  static List<QuerySpec> loadQueries(Path p) throws IOException {
    List<QuerySpec> qs = new ArrayList<>();
    try (BufferedReader r = openText(p)) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isBlank()) continue;
        Map<String, Object> m = parseFlat(line);
        String q = (String) m.get("query");
        if (q == null) throw new IOException(p + ": line without \"query\": " + line);
        String kind = (String) (m.get("class") != null ? m.get("class") : m.get("kind"));
        @SuppressWarnings("unchecked")
        List<String> modes = (List<String>) m.get("modes");
        qs.add(new QuerySpec(q, kind, (String) m.get("name"), modes));
      }
    }
    return qs;
  }

  /** Top-level scalar fields of one JSON object (strings, integers, null); nested values skipped. */
  static Map<String, Object> parseFlat(String line) throws IOException {
    Map<String, Object> m = new HashMap<>();
    try (JsonParser jp = JSON.createParser(line)) {
      if (jp.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object: " + line);
      while (jp.nextToken() == JsonToken.FIELD_NAME) {
        String key = jp.currentName();
        JsonToken v = jp.nextToken();
        switch (v) {
          case VALUE_STRING -> m.put(key, jp.getText());
          case VALUE_NUMBER_INT -> m.put(key, jp.getLongValue());
          case VALUE_NUMBER_FLOAT -> m.put(key, jp.getDoubleValue());
          case VALUE_NULL -> m.put(key, null);
          case VALUE_TRUE, VALUE_FALSE -> m.put(key, v == JsonToken.VALUE_TRUE);
          case START_ARRAY -> {
            // An array of strings (a query's "modes"); anything else in it is skipped.
            List<String> xs = new ArrayList<>();
            for (JsonToken t = jp.nextToken(); t != JsonToken.END_ARRAY; t = jp.nextToken()) {
              if (t == JsonToken.VALUE_STRING) xs.add(jp.getText());
              else jp.skipChildren();
            }
            m.put(key, xs);
          }
          default -> jp.skipChildren();
        }
      }
    }
    return m;
  }

  // ---------------------------------------------------------------- util

  static void log(String fmt, Object... args) {
    System.err.println("[lucene-bench] " + String.format(Locale.ROOT, fmt, args));
  }

  /** Minimal ordered JSON object writer (compact, no spaces). */
  static final class Json {
    private final StringBuilder sb = new StringBuilder("{");
    private boolean first = true;

    private Json key(String k) {
      if (!first) sb.append(',');
      first = false;
      quote(sb, k);
      sb.append(':');
      return this;
    }

    Json str(String k, String v) {
      key(k);
      if (v == null) sb.append("null");
      else quote(sb, v);
      return this;
    }

    Json num(String k, long v) {
      key(k);
      sb.append(v);
      return this;
    }

    Json dbl(String k, double v, int decimals) {
      key(k);
      if (Double.isNaN(v) || Double.isInfinite(v)) {
        sb.append("null");
      } else {
        sb.append(BigDecimal.valueOf(v).setScale(decimals, java.math.RoundingMode.HALF_EVEN)
            .stripTrailingZeros().toPlainString());
      }
      return this;
    }

    Json raw(String k, String json) {
      key(k);
      sb.append(json);
      return this;
    }

    String end() {
      return sb.toString() + "}";
    }

    static void quote(StringBuilder sb, String s) {
      sb.append('"');
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        switch (c) {
          case '"' -> sb.append("\\\"");
          case '\\' -> sb.append("\\\\");
          case '\n' -> sb.append("\\n");
          case '\r' -> sb.append("\\r");
          case '\t' -> sb.append("\\t");
          case '\b' -> sb.append("\\b");
          case '\f' -> sb.append("\\f");
          default -> {
            if (c < 0x20) sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else sb.append(c);
          }
        }
      }
      sb.append('"');
    }
  }

  /** Tiny "--flag value" parser. */
  static final class Args {
    private final Map<String, List<String>> m = new LinkedHashMap<>();

    Args(String[] args) {
      for (int i = 0; i < args.length; i++) {
        String k = args[i];
        if (!k.startsWith("--")) throw new IllegalArgumentException("unexpected argument: " + k);
        String v;
        int eq = k.indexOf('=');
        if (eq > 0) {
          v = k.substring(eq + 1);
          k = k.substring(0, eq);
        } else {
          if (i + 1 >= args.length) throw new IllegalArgumentException("missing value for " + k);
          v = args[++i];
        }
        m.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
      }
    }

    String opt(String k, String def) {
      List<String> v = m.remove(k);
      if (v == null) return def;
      if (v.size() > 1) throw new IllegalArgumentException(k + " given more than once");
      return v.get(0);
    }

    String req(String k) {
      String v = opt(k, null);
      if (v == null) throw new IllegalArgumentException("missing required " + k);
      return v;
    }

    int intOpt(String k, int def) {
      String v = opt(k, null);
      return v == null ? def : Integer.parseInt(v);
    }

    double doubleOpt(String k, double def) {
      String v = opt(k, null);
      return v == null ? def : Double.parseDouble(v);
    }

    List<String> multi(String k) {
      List<String> v = m.remove(k);
      return v == null ? List.of() : v;
    }

    void done() {
      if (!m.isEmpty()) throw new IllegalArgumentException("unknown option(s): " + m.keySet());
    }
  }

  private LuceneBench() {}
}
