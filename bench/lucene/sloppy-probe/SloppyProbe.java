import java.util.*;
import org.apache.lucene.analysis.core.WhitespaceAnalyzer;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.store.ByteBuffersDirectory;

/**
 * Lucene's sloppy phrase frequency on random cases, for quarry's unit test of its repeat groups
 * (crates/quarry/src/search/sloppy.rs). Each case is one document of a few words from {a, b, c,
 * d} and a sloppy phrase or multi-phrase over them (a position's terms joined by |), so terms
 * repeat across positions often; the line is doc, query, slop and the explain's phraseFreq (0
 * when the document does not match), tab-separated. Regenerate with
 *
 * <pre>
 * mvn -q -f bench/lucene/pom.xml package
 * $JAVA_HOME/bin/java -cp bench/lucene/target/lucene-bench.jar \
 *     bench/lucene/sloppy-probe/SloppyProbe.java 42 2000 > tests/fixtures/lucene-sloppy-phrases.tsv
 * </pre>
 */
public class SloppyProbe {
  static Float phraseFreq(Explanation e) {
    if (e.getDescription().startsWith("phraseFreq=")) return e.getValue().floatValue();
    for (Explanation d : e.getDetails()) { Float f = phraseFreq(d); if (f != null) return f; }
    return null;
  }
  public static void main(String[] args) throws Exception {
    long seed = Long.parseLong(args[0]);
    int cases = Integer.parseInt(args[1]);
    Random r = new Random(seed);
    String[] vocab = {"a", "b", "c", "d"};
    StringBuilder out = new StringBuilder();
    for (int c = 0; c < cases; c++) {
      int nv = 2 + r.nextInt(3);
      int len = 1 + r.nextInt(20);
      StringBuilder doc = new StringBuilder();
      for (int i = 0; i < len; i++) { if (i > 0) doc.append(' '); doc.append(vocab[r.nextInt(nv)]); }
      boolean multi = r.nextInt(3) == 0;
      int np = 2 + r.nextInt(4);
      List<List<String>> q = new ArrayList<>();
      for (int p = 0; p < np; p++) {
        int k = multi ? 1 + r.nextInt(2) : 1;
        TreeSet<String> s = new TreeSet<>();
        while (s.size() < k) s.add(vocab[r.nextInt(nv)]);
        q.add(new ArrayList<>(s));
      }
      int slop = 1 + r.nextInt(6);
      ByteBuffersDirectory dir = new ByteBuffersDirectory();
      try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(new WhitespaceAnalyzer()))) {
        Document d = new Document();
        d.add(new TextField("f", doc.toString(), Field.Store.NO));
        w.addDocument(d);
      }
      Query query;
      boolean allSingle = q.stream().allMatch(l -> l.size() == 1);
      if (allSingle) {
        PhraseQuery.Builder b = new PhraseQuery.Builder();
        for (int p = 0; p < np; p++) b.add(new Term("f", q.get(p).get(0)), p);
        b.setSlop(slop);
        query = b.build();
      } else {
        MultiPhraseQuery.Builder b = new MultiPhraseQuery.Builder();
        for (int p = 0; p < np; p++) b.add(q.get(p).stream().map(t -> new Term("f", t)).toArray(Term[]::new), p);
        b.setSlop(slop);
        query = b.build();
      }
      float freq = 0;
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher s = new IndexSearcher(reader);
        Explanation e = s.explain(query, 0);
        if (e.isMatch()) { Float f = phraseFreq(e); if (f == null) throw new IllegalStateException(e.toString()); freq = f; }
      }
      StringBuilder qs = new StringBuilder();
      for (int p = 0; p < np; p++) { if (p > 0) qs.append(' '); qs.append(String.join("|", q.get(p))); }
      out.append(doc).append('\t').append(qs).append('\t').append(slop).append('\t').append(freq).append('\n');
    }
    System.out.print(out);
  }
}
