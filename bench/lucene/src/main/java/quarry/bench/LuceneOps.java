package quarry.bench;

import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FilterMergePolicy;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.MergePolicy;
import org.apache.lucene.index.MergeTrigger;
import org.apache.lucene.index.SegmentInfos;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/**
 * The {@code ops} subcommand: replays a script of adds, deletes, updates, commits and force-merges
 * on one IndexWriter and answers a query set at each {@code check} of the script, so that quarry's
 * online indexing (deletes and updates, statistics with deleted documents, merges that expunge
 * them) can be compared with Lucene's, answer by answer.
 *
 * <p>Script lines (JSON, one per line):
 *
 * <ul>
 *   <li>{@code {"op":"add","from":A,"to":B}}: add the corpus documents at file positions [A, B);
 *   <li>{@code {"op":"delete","id":N}}: {@code deleteDocuments(new Term("key", "N"))};
 *   <li>{@code {"op":"update","id":N,"title":..,"body":..}}: {@code updateDocument(new Term("key",
 *       "N"), doc)};
 *   <li>{@code {"op":"delete_query","query":".."}}: {@code deleteDocuments(parsed query)};
 *   <li>{@code {"op":"commit"}}; {@code {"op":"force_merge"}}: {@code forceMerge(1)} + commit;
 *   <li>{@code {"op":"check","phase":".."}}: open a near-real-time reader on the writer and print,
 *       per query and mode, the hit count and the top 10 (stored id + score).
 * </ul>
 *
 * <p>The segment structure is deterministic: one indexing thread, a RAM buffer large enough that
 * only commits and NRT readers flush, no merges except the forced ones (which merge adjacent
 * segments in order, so doc ids keep the order of the adds).
 */
final class LuceneOps {

  /** No natural merges; forced merges as LogByteSizeMergePolicy does them (adjacent, in order). */
  static final class ForcedOnly extends FilterMergePolicy {
    ForcedOnly() {
      super(new LogByteSizeMergePolicy());
    }

    @Override
    public MergeSpecification findMerges(
        MergeTrigger trigger, SegmentInfos infos, MergeContext ctx) {
      return null;
    }

    @Override
    public MergeSpecification findFullFlushMerges(
        MergeTrigger trigger, SegmentInfos infos, MergeContext ctx) {
      return null;
    }
  }

  static Document toLucene(int id, String title, String body) {
    Document doc = LuceneBench.toLucene(new LuceneBench.Doc(id, title, body));
    doc.add(new StringField("key", Integer.toString(id), Field.Store.NO));
    return doc;
  }

  static void cmdOps(LuceneBench.Args a) throws Exception {
    Path input = Paths.get(a.req("--input"));
    Path script = Paths.get(a.req("--script"));
    Path queriesFile = Paths.get(a.req("--queries"));
    Path indexDir = Paths.get(a.req("--index"));
    String[] modes = a.opt("--modes", String.join(",", LuceneBench.ALL_MODES)).split(",");
    a.done();
    for (String m : modes) {
      if (!Arrays.asList(LuceneBench.ALL_MODES).contains(m)) {
        throw new IllegalArgumentException("unknown mode " + m);
      }
    }
    List<LuceneBench.Doc> docs = LuceneBench.loadDocs(input);
    List<LuceneBench.QuerySpec> specs = LuceneBench.loadQueries(queriesFile);
    List<Query> queries = new ArrayList<>();
    for (LuceneBench.QuerySpec s : specs) queries.add(LuceneBench.parse(s.query(), "body"));
    Files.createDirectories(indexDir);
    IndexWriterConfig iwc = new IndexWriterConfig(new StandardAnalyzer());
    iwc.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
    iwc.setRAMBufferSizeMB(512);
    iwc.setMergePolicy(new ForcedOnly());
    long t0 = System.nanoTime();
    int ops = 0;
    try (Directory dir = FSDirectory.open(indexDir);
        IndexWriter w = new IndexWriter(dir, iwc);
        BufferedReader r = LuceneBench.openText(script)) {
      String line;
      int lineNo = 0;
      while ((line = r.readLine()) != null) {
        lineNo++;
        if (line.isBlank()) continue;
        ops++;
        Map<String, Object> op = LuceneBench.parseFlat(line);
        String kind = (String) op.get("op");
        if (kind == null) throw new IllegalArgumentException(script + ":" + lineNo + ": no \"op\"");
        switch (kind) {
          case "add" -> {
            int from = ((Number) op.get("from")).intValue();
            int to = ((Number) op.get("to")).intValue();
            for (int i = from; i < to; i++) {
              LuceneBench.Doc d = docs.get(i);
              w.addDocument(toLucene(d.id(), d.title(), d.body()));
            }
          }
          case "delete" -> {
            long id = ((Number) op.get("id")).longValue();
            w.deleteDocuments(new Term("key", Long.toString(id)));
          }
          case "update" -> {
            int id = ((Number) op.get("id")).intValue();
            w.updateDocument(
                new Term("key", Integer.toString(id)),
                toLucene(id, (String) op.get("title"), (String) op.get("body")));
          }
          case "delete_query" ->
              w.deleteDocuments(LuceneBench.parse((String) op.get("query"), "body"));
          case "commit" -> w.commit();
          case "force_merge" -> {
            w.forceMerge(1);
            w.commit();
          }
          case "check" -> check(w, (String) op.get("phase"), specs, queries, modes);
          default ->
              throw new IllegalArgumentException(
                  script + ":" + lineNo + ": unknown op " + kind);
        }
      }
    }
    LuceneBench.log("replayed %d ops in %.2f s", ops, (System.nanoTime() - t0) / 1e9);
  }

  static void check(
      IndexWriter w,
      String phase,
      List<LuceneBench.QuerySpec> specs,
      List<Query> queries,
      String[] modes)
      throws Exception {
    try (DirectoryReader reader = DirectoryReader.open(w)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      searcher.setQueryCache(null);
      LuceneBench.Json st = new LuceneBench.Json();
      st.str("engine", LuceneBench.ENGINE).str("op", "state").str("phase", phase);
      st.num("segments", reader.leaves().size()).num("docs", reader.maxDoc());
      st.num("live_docs", reader.numDocs());
      LuceneBench.OUT.println(st.end());
      for (int qi = 0; qi < queries.size(); qi++) {
        Query q = queries.get(qi);
        for (String m : modes) {
          LuceneBench.Json j = new LuceneBench.Json();
          j.str("engine", LuceneBench.ENGINE).str("op", "check").str("phase", phase);
          j.str("query", specs.get(qi).query()).str("mode", m);
          if (m.equals("count")) {
            j.num("hits", searcher.count(q));
          } else {
            int threshold = m.equals("top10") ? 1000 : Integer.MAX_VALUE;
            TopDocs td = searcher.search(q, new TopScoreDocCollectorManager(10, threshold));
            j.num("hits", td.totalHits.value());
            j.str("hits_relation", td.totalHits.relation() == TotalHits.Relation.EQUAL_TO ? "eq" : "gte");
            j.raw("top", LuceneBench.topJson(td, searcher.storedFields(), false));
          }
          LuceneBench.OUT.println(j.end());
        }
      }
    }
  }

  private LuceneOps() {}
}
