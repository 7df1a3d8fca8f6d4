package quarry.bench;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.SortedSetDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SortedSetDocValues;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.CollectorManager;
import org.apache.lucene.search.FieldDoc;
import org.apache.lucene.search.IndexOrDocValuesQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.LeafCollector;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.FixedBitSet;
import org.apache.lucene.util.Version;

/**
 * {@code structured-bench}: Lucene's side of {@code quarry-bench structured}. Indexes the
 * prepared datasets ({@code <data>/<name>.jsonl} with {@code <name>.schema.json}) and runs every
 * query of {@code --queries} (the engine-neutral specs of {@code
 * crates/quarry-bench/src/structured/spec.rs}) {@code --warmup} times, then {@code --iters}
 * timed times, printing JSON lines: {@code hello}, one {@code index} per dataset, one {@code
 * query} per spec with its answer and every sample in µs.
 *
 * <p>Fields: long and date = LongPoint + NumericDocValuesField; keyword = StringField +
 * SortedDocValuesField (SortedSetDocValuesField when multi-valued); text = TextField with
 * StandardAnalyzer (no stop words). One thread, LogByteSizeMergePolicy, forceMerge(1).
 *
 * <p>Queries: text words as SHOULD TermQuery in a MUST clause; filters as FILTER clauses: ranges
 * as IndexOrDocValuesQuery(LongPoint range, NumericDocValuesField slow range) (what Elasticsearch
 * builds), terms as TermQuery. Ops: count = IndexSearcher.count; top by score =
 * TopScoreDocCollectorManager(k, Integer.MAX_VALUE) (exact count); sort = Sort(field LONG with
 * missing last, id LONG) through search / searchAfter (default total-hits threshold); terms,
 * date_histogram, stats, cardinality = collectors over doc values (below).
 */
final class LuceneStructuredBench {
  private LuceneStructuredBench() {}

  static final long DAY = 86_400_000L;

  record FieldDef(String name, String kind, boolean multi) {}

  // ------------------------------------------------------------------ JSON

  @SuppressWarnings("unchecked")
  static Map<String, Object> obj(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> arr(Object o) {
    return (List<Object>) o;
  }

  static Object readValue(JsonParser p) throws IOException {
    JsonToken t = p.currentToken();
    switch (t) {
      case START_OBJECT -> {
        Map<String, Object> m = new LinkedHashMap<>();
        while (p.nextToken() != JsonToken.END_OBJECT) {
          String k = p.currentName();
          p.nextToken();
          m.put(k, readValue(p));
        }
        return m;
      }
      case START_ARRAY -> {
        List<Object> l = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) l.add(readValue(p));
        return l;
      }
      case VALUE_STRING -> {
        return p.getText();
      }
      case VALUE_NUMBER_INT -> {
        return p.getLongValue();
      }
      case VALUE_NUMBER_FLOAT -> {
        return p.getDoubleValue();
      }
      case VALUE_TRUE -> {
        return Boolean.TRUE;
      }
      case VALUE_FALSE -> {
        return Boolean.FALSE;
      }
      default -> {
        return null;
      }
    }
  }

  static Object parse(String s) throws IOException {
    try (JsonParser p = LuceneBench.JSON.createParser(s)) {
      p.nextToken();
      return readValue(p);
    }
  }

  static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"').toString();
  }

  // ------------------------------------------------------------------ index

  static List<FieldDef> schema(Path file) throws IOException {
    List<FieldDef> out = new ArrayList<>();
    for (Object f : arr(obj(parse(Files.readString(file))).get("fields"))) {
      Map<String, Object> m = obj(f);
      out.add(new FieldDef((String) m.get("name"), (String) m.get("kind"), Boolean.TRUE.equals(m.get("multi"))));
    }
    return out;
  }

  static Document toLucene(List<FieldDef> fields, Map<String, Object> d) {
    Document doc = new Document();
    for (FieldDef f : fields) {
      Object v = d.get(f.name);
      if (v == null) continue;
      switch (f.kind) {
        case "long", "date" -> {
          long x = (Long) v;
          doc.add(new LongPoint(f.name, x));
          doc.add(new NumericDocValuesField(f.name, x));
        }
        case "keyword" -> {
          List<Object> vals = v instanceof List<?> ? arr(v) : List.of(v);
          for (Object s : vals) {
            doc.add(new StringField(f.name, (String) s, Field.Store.NO));
            BytesRef b = new BytesRef((String) s);
            doc.add(f.multi ? new SortedSetDocValuesField(f.name, b) : new SortedDocValuesField(f.name, b));
          }
        }
        case "text" -> doc.add(new TextField(f.name, (String) v, Field.Store.NO));
        default -> throw new IllegalArgumentException("field kind " + f.kind);
      }
    }
    return doc;
  }

  static String index(Path dataDir, String name, Path indexDir) throws IOException {
    List<FieldDef> fields = schema(dataDir.resolve(name + ".schema.json"));
    List<Map<String, Object>> docs = new ArrayList<>();
    try (BufferedReader r = Files.newBufferedReader(dataDir.resolve(name + ".jsonl"), StandardCharsets.UTF_8)) {
      String line;
      while ((line = r.readLine()) != null) if (!line.isBlank()) docs.add(obj(parse(line)));
    }
    long t0 = System.nanoTime();
    try (Directory dir = FSDirectory.open(indexDir)) {
      IndexWriterConfig iwc = new IndexWriterConfig(new StandardAnalyzer());
      iwc.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
      iwc.setMergePolicy(new LogByteSizeMergePolicy());
      iwc.setRAMBufferSizeMB(256);
      try (IndexWriter w = new IndexWriter(dir, iwc)) {
        for (Map<String, Object> d : docs) w.addDocument(toLucene(fields, d));
        w.forceMerge(1);
        w.commit();
      }
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    LuceneBench.OUT.println(
        String.format(
            java.util.Locale.ROOT,
            "{\"op\":\"index\",\"dataset\":%s,\"docs\":%d,\"seconds\":%.3f,\"how\":%s}",
            q(name),
            docs.size(),
            secs,
            q(
                "IndexWriter 1 thread, RAM buffer 256 MB, LogByteSizeMergePolicy, forceMerge(1), commit; "
                    + "long/date LongPoint + NumericDocValuesField, keywords StringField + Sorted(Set)DocValuesField, "
                    + "text TextField (StandardAnalyzer)")));
    return name;
  }

  // ------------------------------------------------------------------ queries

  static Query query(Map<String, Object> spec) {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    boolean any = false;
    List<Object> text = arr(spec.get("text"));
    if (!text.isEmpty()) {
      BooleanQuery.Builder t = new BooleanQuery.Builder();
      for (Object w : text) t.add(new TermQuery(new Term("text", (String) w)), BooleanClause.Occur.SHOULD);
      b.add(t.build(), BooleanClause.Occur.MUST);
      any = true;
    }
    for (Object fo : arr(spec.get("filters"))) {
      Map<String, Object> f = obj(fo);
      String field = (String) f.get("field");
      Query fq;
      if ("range".equals(f.get("kind"))) {
        long lo = f.get("gte") == null ? Long.MIN_VALUE : (Long) f.get("gte");
        long hi = f.get("lte") == null ? Long.MAX_VALUE : (Long) f.get("lte");
        fq =
            new IndexOrDocValuesQuery(
                LongPoint.newRangeQuery(field, lo, hi), NumericDocValuesField.newSlowRangeQuery(field, lo, hi));
      } else {
        fq = new TermQuery(new Term(field, (String) f.get("value")));
      }
      b.add(fq, BooleanClause.Occur.FILTER);
      any = true;
    }
    return any ? b.build() : new MatchAllDocsQuery();
  }

  /** One prepared query: what to run and how to turn its result into the answer JSON. */
  interface Prepared {
    Object run() throws IOException;

    String answer(Object out) throws IOException;
  }

  static long idOf(IndexSearcher s, int doc) throws IOException {
    List<LeafReaderContext> leaves = s.getIndexReader().leaves();
    LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(doc, leaves));
    NumericDocValues ids = DocValues.getNumeric(leaf.reader(), "id");
    if (!ids.advanceExact(doc - leaf.docBase)) throw new IllegalStateException("no id for doc " + doc);
    return ids.longValue();
  }

  static String hits(IndexSearcher s, long total, ScoreDoc[] docs, boolean scores) throws IOException {
    StringBuilder ids = new StringBuilder();
    StringBuilder sc = new StringBuilder();
    for (ScoreDoc d : docs) {
      if (ids.length() > 0) {
        ids.append(',');
        if (scores) sc.append(',');
      }
      ids.append(idOf(s, d.doc));
      if (scores) sc.append(Float.toString(d.score));
    }
    return "{\"kind\":\"hits\",\"total\":" + total + ",\"ids\":[" + ids + "],\"scores\":[" + sc + "]}";
  }

  static String buckets(List<Map.Entry<String, Long>> b) {
    StringBuilder sb = new StringBuilder("{\"kind\":\"buckets\",\"buckets\":[");
    for (int i = 0; i < b.size(); i++) {
      if (i > 0) sb.append(',');
      sb.append('[').append(q(b.get(i).getKey())).append(',').append(b.get(i).getValue()).append(']');
    }
    return sb.append("]}").toString();
  }

  // Terms: ordinal counts per leaf, merged by term.
  static final class TermsCollector implements Collector {
    final String field;
    final Map<String, Long> counts = new HashMap<>();

    TermsCollector(String field) {
      this.field = field;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext ctx) throws IOException {
      SortedSetDocValues dv = DocValues.getSortedSet(ctx.reader(), field);
      long[] ords = new long[(int) dv.getValueCount()];
      return new LeafCollector() {
        @Override
        public void setScorer(Scorable scorer) {}

        @Override
        public void collect(int doc) throws IOException {
          if (dv.advanceExact(doc)) {
            for (int i = 0; i < dv.docValueCount(); i++) ords[(int) dv.nextOrd()]++;
          }
        }

        @Override
        public void finish() throws IOException {
          for (int o = 0; o < ords.length; o++) {
            if (ords[o] > 0) counts.merge(dv.lookupOrd(o).utf8ToString(), ords[o], Long::sum);
          }
        }
      };
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.COMPLETE_NO_SCORES;
    }
  }

  // Cardinality: a bit set of ordinals per leaf, terms merged across leaves.
  static final class CardinalityCollector implements Collector {
    final String field;
    final Set<BytesRef> seen = new HashSet<>();

    CardinalityCollector(String field) {
      this.field = field;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext ctx) throws IOException {
      SortedSetDocValues dv = DocValues.getSortedSet(ctx.reader(), field);
      FixedBitSet bits = new FixedBitSet((int) Math.max(1, dv.getValueCount()));
      return new LeafCollector() {
        @Override
        public void setScorer(Scorable scorer) {}

        @Override
        public void collect(int doc) throws IOException {
          if (dv.advanceExact(doc)) {
            for (int i = 0; i < dv.docValueCount(); i++) bits.set((int) dv.nextOrd());
          }
        }

        @Override
        public void finish() throws IOException {
          for (int o = bits.nextSetBit(0); o != org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS && o < dv.getValueCount();
              o = o + 1 < bits.length() ? bits.nextSetBit(o + 1) : org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS) {
            seen.add(BytesRef.deepCopyOf(dv.lookupOrd(o)));
          }
        }
      };
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.COMPLETE_NO_SCORES;
    }
  }

  // Stats over a NumericDocValues field.
  static final class StatsCollector implements Collector {
    final String field;
    long count;
    long sum;
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;

    StatsCollector(String field) {
      this.field = field;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext ctx) throws IOException {
      NumericDocValues dv = DocValues.getNumeric(ctx.reader(), field);
      return new LeafCollector() {
        @Override
        public void setScorer(Scorable scorer) {}

        @Override
        public void collect(int doc) throws IOException {
          if (dv.advanceExact(doc)) {
            long v = dv.longValue();
            count++;
            sum += v;
            if (v < min) min = v;
            if (v > max) max = v;
          }
        }
      };
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.COMPLETE_NO_SCORES;
    }
  }

  // Date histogram: per UTC day (floor division) or calendar month (bounds of the last month
  // cached: the dates come in runs).
  static final class HistogramCollector implements Collector {
    final String field;
    final boolean month;
    final Map<Long, long[]> counts = new HashMap<>();

    HistogramCollector(String field, boolean month) {
      this.field = field;
      this.month = month;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext ctx) throws IOException {
      NumericDocValues dv = DocValues.getNumeric(ctx.reader(), field);
      return new LeafCollector() {
        long lo = 1;
        long hi = 0;
        long[] cur;

        @Override
        public void setScorer(Scorable scorer) {}

        @Override
        public void collect(int doc) throws IOException {
          if (!dv.advanceExact(doc)) return;
          long v = dv.longValue();
          if (v < lo || v >= hi) {
            long start;
            long end;
            if (month) {
              LocalDate d = LocalDate.ofEpochDay(Math.floorDiv(v, DAY)).withDayOfMonth(1);
              start = d.toEpochDay() * DAY;
              end = d.plusMonths(1).toEpochDay() * DAY;
            } else {
              start = Math.floorDiv(v, DAY) * DAY;
              end = start + DAY;
            }
            lo = start;
            hi = end;
            cur = counts.computeIfAbsent(start, k -> new long[1]);
          }
          cur[0]++;
        }
      };
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.COMPLETE_NO_SCORES;
    }
  }

  static <C extends Collector> CollectorManager<C, List<C>> manager(java.util.function.Supplier<C> make) {
    return new CollectorManager<>() {
      @Override
      public C newCollector() {
        return make.get();
      }

      @Override
      public List<C> reduce(Collection<C> collectors) {
        return new ArrayList<>(collectors);
      }
    };
  }

  @SuppressWarnings("unchecked")
  static Prepared prepare(IndexSearcher s, Map<String, Object> spec) {
    Query query = query(spec);
    Map<String, Object> op = obj(spec.get("op"));
    String kind = (String) op.get("kind");
    String field = (String) op.get("field");
    switch (kind) {
      case "count" -> {
        return new Prepared() {
          public Object run() throws IOException {
            return s.count(query);
          }

          public String answer(Object out) {
            return "{\"kind\":\"count\",\"count\":" + out + "}";
          }
        };
      }
      case "top_score" -> {
        int k = ((Long) op.get("k")).intValue();
        return new Prepared() {
          public Object run() throws IOException {
            return s.search(query, new TopScoreDocCollectorManager(k, Integer.MAX_VALUE));
          }

          public String answer(Object out) throws IOException {
            TopDocs td = (TopDocs) out;
            return hits(s, td.totalHits.value(), td.scoreDocs, true);
          }
        };
      }
      case "sort" -> {
        int k = ((Long) op.get("k")).intValue();
        boolean desc = (Boolean) op.get("desc");
        SortField main = new SortField(field, SortField.Type.LONG, desc);
        main.setMissingValue(desc ? Long.MIN_VALUE : Long.MAX_VALUE);
        Sort sort = new Sort(main, new SortField("id", SortField.Type.LONG));
        List<Object> after = op.get("after") == null ? null : arr(op.get("after"));
        FieldDoc afterDoc =
            after == null
                ? null
                // The doc of the after position only breaks ties of equal sort values; (value, id)
                // is unique, so the last doc excludes exactly the after document itself.
                : new FieldDoc(
                    s.getIndexReader().maxDoc() - 1, Float.NaN, new Object[] {after.get(0), after.get(1)});
        return new Prepared() {
          public Object run() throws IOException {
            return afterDoc == null ? s.search(query, k, sort) : s.searchAfter(afterDoc, query, k, sort);
          }

          public String answer(Object out) throws IOException {
            TopDocs td = (TopDocs) out;
            return hits(s, s.count(query), td.scoreDocs, false);
          }
        };
      }
      case "terms" -> {
        int size = ((Long) op.get("size")).intValue();
        CollectorManager<TermsCollector, List<TermsCollector>> m = manager(() -> new TermsCollector(field));
        return new Prepared() {
          public Object run() throws IOException {
            Map<String, Long> all = new HashMap<>();
            for (TermsCollector c : s.search(query, m)) c.counts.forEach((t, n) -> all.merge(t, n, Long::sum));
            List<Map.Entry<String, Long>> e = new ArrayList<>(all.entrySet());
            e.sort(
                Comparator.comparing((Map.Entry<String, Long> x) -> -x.getValue()).thenComparing(Map.Entry::getKey));
            return e.subList(0, Math.min(size, e.size()));
          }

          public String answer(Object out) {
            return buckets((List<Map.Entry<String, Long>>) out);
          }
        };
      }
      case "date_histogram" -> {
        boolean month = "month".equals(op.get("interval"));
        CollectorManager<HistogramCollector, List<HistogramCollector>> m =
            manager(() -> new HistogramCollector(field, month));
        return new Prepared() {
          public Object run() throws IOException {
            TreeMap<Long, Long> all = new TreeMap<>();
            for (HistogramCollector c : s.search(query, m)) c.counts.forEach((t, n) -> all.merge(t, n[0], Long::sum));
            return all;
          }

          public String answer(Object out) {
            List<Map.Entry<String, Long>> b = new ArrayList<>();
            ((TreeMap<Long, Long>) out).forEach((key, n) -> b.add(Map.entry(Long.toString(key), n)));
            return buckets(b);
          }
        };
      }
      case "stats" -> {
        CollectorManager<StatsCollector, List<StatsCollector>> m = manager(() -> new StatsCollector(field));
        return new Prepared() {
          public Object run() throws IOException {
            StatsCollector all = new StatsCollector(field);
            for (StatsCollector c : s.search(query, m)) {
              all.count += c.count;
              all.sum += c.sum;
              all.min = Math.min(all.min, c.min);
              all.max = Math.max(all.max, c.max);
            }
            return all;
          }

          public String answer(Object out) {
            StatsCollector c = (StatsCollector) out;
            if (c.count == 0) return "{\"kind\":\"stats\",\"count\":0,\"min\":null,\"max\":null,\"sum\":0,\"avg\":null}";
            return "{\"kind\":\"stats\",\"count\":" + c.count + ",\"min\":" + c.min + ",\"max\":" + c.max + ",\"sum\":"
                + c.sum + ",\"avg\":" + ((double) c.sum / c.count) + "}";
          }
        };
      }
      case "cardinality" -> {
        CollectorManager<CardinalityCollector, List<CardinalityCollector>> m =
            manager(() -> new CardinalityCollector(field));
        return new Prepared() {
          public Object run() throws IOException {
            Set<BytesRef> all = new HashSet<>();
            for (CardinalityCollector c : s.search(query, m)) all.addAll(c.seen);
            return all.size();
          }

          public String answer(Object out) {
            return "{\"kind\":\"cardinality\",\"value\":" + out + "}";
          }
        };
      }
      default -> throw new IllegalArgumentException("op " + kind);
    }
  }

  static void cmd(LuceneBench.Args a) throws Exception {
    Path data = Paths.get(a.req("--data"));
    Path index = Paths.get(a.req("--index"));
    Path queries = Paths.get(a.req("--queries"));
    int warmup = a.intOpt("--warmup", 20);
    int iters = a.intOpt("--iters", 200);
    a.done();
    LuceneBench.OUT.println(
        "{\"op\":\"hello\",\"engine\":\"lucene\",\"version\":" + q("Lucene " + Version.LATEST + ", Java "
            + Runtime.version()) + "}");
    Map<String, IndexSearcher> searchers = new HashMap<>();
    List<DirectoryReader> readers = new ArrayList<>();
    for (String ds : List.of("flights", "reuters")) {
      Path dir = index.resolve(ds);
      Files.createDirectories(dir);
      index(data, ds, dir);
      DirectoryReader r = DirectoryReader.open(FSDirectory.open(dir));
      readers.add(r);
      IndexSearcher s = new IndexSearcher(r);
      // No query cache: every timed run does the work (quarry and Tantivy cache nothing either).
      s.setQueryCache(null);
      searchers.put(ds, s);
    }
    for (String line : Files.readAllLines(queries, StandardCharsets.UTF_8)) {
      if (line.isBlank()) continue;
      Map<String, Object> spec = obj(parse(line));
      String name = (String) spec.get("name");
      IndexSearcher s = searchers.get((String) spec.get("dataset"));
      Prepared p = prepare(s, spec);
      for (int i = 0; i < warmup; i++) p.run();
      StringBuilder samples = new StringBuilder();
      Object last = null;
      for (int i = 0; i < Math.max(1, iters); i++) {
        long t0 = System.nanoTime();
        last = p.run();
        long t1 = System.nanoTime();
        if (i > 0) samples.append(',');
        samples.append(String.format(java.util.Locale.ROOT, "%.3f", (t1 - t0) / 1000.0));
      }
      LuceneBench.OUT.println(
          "{\"op\":\"query\",\"name\":" + q(name) + ",\"answer\":" + p.answer(last) + ",\"samples_us\":[" + samples
              + "]}");
    }
    for (DirectoryReader r : readers) r.close();
  }
}
