package quarry.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.QueryTimeoutImpl;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.MMapDirectory;
import org.apache.lucene.store.NIOFSDirectory;

/**
 * The {@code probe} command of the I/O study ({@code quarry-bench io}), the same as the Rust
 * drivers' (crates/quarry-bench/src/drivers/probe.rs): open the index with the chosen directory,
 * run every query once per round (round-robin) in one mode, print one {@code probe} record per
 * query with every sample, then one {@code probe_end} record (open time, VmHWM, major faults,
 * /proc/self/io read_bytes). Timed per search: top10 = search + stored ids of the hits; count and
 * top10_count = the search alone. {@code --deadline-ms}: IndexSearcher.setTimeout with a fresh
 * QueryTimeoutImpl per search; a search that ran out returns partial results (timed_out).
 */
final class LuceneProbe {
  private LuceneProbe() {}

  /** The directory named by {@code --directory}: mmap, niofs or default (FSDirectory.open). */
  static Directory openDir(Path p, String kind) throws IOException {
    return switch (kind) {
      case "mmap" -> new MMapDirectory(p);
      case "niofs" -> new NIOFSDirectory(p);
      case "default" -> FSDirectory.open(p);
      default -> throw new IllegalArgumentException("--directory must be mmap, niofs or default, not " + kind);
    };
  }

  static long readBytes() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/io"))) {
        if (line.startsWith("read_bytes:")) return Long.parseLong(line.substring(11).trim());
      }
    } catch (Exception e) {
      // not Linux, or /proc/self/io not readable
    }
    return -1;
  }

  static void cmdProbe(LuceneBench.Args a) throws Exception {
    Path indexDir = Paths.get(a.req("--index"));
    Path queriesFile = Paths.get(a.req("--queries"));
    String mode = a.opt("--mode", "top10");
    int rounds = a.intOpt("--rounds", 1);
    long deadlineMs = a.intOpt("--deadline-ms", -1);
    String kind = a.opt("--directory", "default");
    String defaultField = a.opt("--default-field", "body");
    a.done();
    List<LuceneBench.QuerySpec> specs = LuceneBench.loadQueries(queriesFile);
    int n = specs.size();
    List<List<Double>> samples = new ArrayList<>();
    long[] hits = new long[n];
    long[] timedOut = new long[n];
    String[] errors = new String[n];
    long t0 = System.nanoTime();
    try (Directory dir = openDir(indexDir, kind);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher base = new IndexSearcher(reader);
      base.setQueryCache(null);
      double openUs = (System.nanoTime() - t0) / 1e3;
      StoredFields stored = base.storedFields();
      List<Query> queries = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        samples.add(new ArrayList<>());
        try {
          queries.add(LuceneBench.parse(specs.get(i).query(), defaultField));
        } catch (Exception e) {
          queries.add(null);
          errors[i] = "parse: " + e;
        }
      }
      for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
          Query q = queries.get(i);
          if (q == null) continue;
          // With a deadline, a fresh searcher per search: IndexSearcher.timedOut() stays true
          // once any search has timed out, so a shared one would flag every later search.
          IndexSearcher searcher = base;
          if (deadlineMs >= 0) {
            searcher = new IndexSearcher(reader);
            searcher.setQueryCache(null);
          }
          long s0 = System.nanoTime();
          if (deadlineMs >= 0) searcher.setTimeout(new QueryTimeoutImpl(deadlineMs));
          switch (mode) {
            case "top10" -> {
              TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, 1000));
              LuceneBench.blackhole += LuceneBench.topJson(td, stored, false).length();
              hits[i] = td.totalHits.value();
            }
            case "top10_count" -> {
              TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, Integer.MAX_VALUE));
              LuceneBench.blackhole += td.scoreDocs.length;
              hits[i] = td.totalHits.value();
            }
            case "count" -> hits[i] = searcher.count(q);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
          }
          samples.get(i).add((System.nanoTime() - s0) / 1e3);
          if (deadlineMs >= 0 && searcher.timedOut()) timedOut[i]++;
        }
      }
      for (int i = 0; i < n; i++) {
        LuceneBench.QuerySpec s = specs.get(i);
        LuceneBench.Json j = new LuceneBench.Json();
        j.str("engine", LuceneBench.ENGINE).str("op", "probe").str("query", s.query()).str("class", s.kind());
        j.str("mode", mode);
        StringBuilder sb = new StringBuilder("[");
        for (int k = 0; k < samples.get(i).size(); k++) {
          if (k > 0) sb.append(',');
          sb.append(String.format(java.util.Locale.ROOT, "%.3f", samples.get(i).get(k)));
        }
        j.raw("samples_us", sb.append(']').toString());
        j.num("hits", hits[i]).num("timed_out", timedOut[i]);
        if (errors[i] != null) j.str("error", errors[i]);
        LuceneBench.OUT.println(j.end());
      }
      long[] stat = LuceneBench.procSelfStat();
      LuceneBench.Json j = new LuceneBench.Json();
      j.str("engine", LuceneBench.ENGINE).str("op", "probe_end").dbl("open_us", openUs, 1);
      j.num("peak_rss_bytes", LuceneBench.peakRssBytes());
      j.num("major_faults", stat[0]).num("read_bytes", readBytes());
      j.str("directory", dir.getClass().getSimpleName());
      LuceneBench.OUT.println(j.end());
    }
    LuceneBench.log("blackhole %d", LuceneBench.blackhole);
  }
}
