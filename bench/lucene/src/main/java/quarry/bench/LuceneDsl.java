package quarry.bench;

import com.fasterxml.jackson.core.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;
import org.apache.lucene.analysis.tokenattributes.TermToBytesRefAttribute;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.queries.function.FunctionScoreQuery;
import org.apache.lucene.queryparser.simple.SimpleQueryParser;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.ConstantScoreQuery;
import org.apache.lucene.search.DisjunctionMaxQuery;
import org.apache.lucene.search.Explanation;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.MatchNoDocsQuery;
import org.apache.lucene.search.MultiPhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.StringHelper;

/**
 * {@code oracle-dsl}: Lucene's answers to queries written in a small subset of Elasticsearch's
 * query DSL, each built into the Lucene query Elasticsearch builds for it, plus Lucene's {@link
 * Explanation} of the top hits.
 *
 * <p>A query line is {@code {"kind": .., "dsl": NODE}}. A NODE is a JSON string (the classic
 * QueryParser, default field body, default operator OR, StandardAnalyzer) or an object with one
 * key: {@code bool} (must/should/must_not/filter arrays, minimum_should_match), {@code dis_max}
 * (queries, tie_breaker: DisjunctionMaxQuery), {@code constant_score} (filter:
 * ConstantScoreQuery), {@code boosting} (positive, negative, negative_boost:
 * FunctionScoreQuery.boostByQuery, which is what Elasticsearch's BoostingQueryBuilder builds),
 * each with an optional {@code boost} (a BoostQuery around it, as Elasticsearch wraps any query
 * whose boost is not 1), {@code simple_query_string} (query, fields, default_operator, flags:
 * Lucene's SimpleQueryParser) and {@code match_phrase_prefix} ({@code {"FIELD": TEXT}} or {@code
 * {"FIELD": {query, slop, max_expansions, boost}}}: {@link PhrasePrefixQuery}, what Elasticsearch's
 * MultiPhrasePrefixQuery does).
 *
 * <p>Output: the stats line of {@code oracle}, then per query {@code type, set, kind, dsl,
 * parsed, hits, top} and, with {@code --explain N}, {@code explain}: the ids and explanation trees
 * ({@code value} as Float.toString, {@code description}, {@code details}) of the top N hits.
 */
final class LuceneDsl {

  static void cmd(LuceneBench.Args a) throws Exception {
    Path input = Paths.get(a.req("--input"));
    List<String> sets = a.multi("--queries-set");
    Path out = Paths.get(a.req("--out"));
    int explainTop = a.intOpt("--explain", 0);
    a.done();
    if (sets.isEmpty()) throw new IllegalArgumentException("at least one --queries-set NAME=FILE");

    List<LuceneBench.Doc> docs = LuceneBench.loadDocs(input);
    Path indexDir = Files.createTempDirectory("lucene-oracle-dsl-");
    try {
      StringBuilder sb = new StringBuilder();
      try (Directory dir = FSDirectory.open(indexDir)) {
        // As `oracle`: one segment whose doc ids are the file order.
        LuceneBench.writeOneSegment(
            dir, new StandardAnalyzer(), docs.stream().map(LuceneBench::toLucene).toList());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = LuceneBench.oneSegmentSearcher(reader);
          StoredFields stored = searcher.storedFields();
          sb.append(LuceneBench.statsLine(reader)).append('\n');
          for (String set : sets) {
            int eq = set.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("--queries-set wants NAME=FILE: " + set);
            String setName = set.substring(0, eq);
            for (Map<String, Object> line : readLines(Paths.get(set.substring(eq + 1)))) {
              Object dsl = line.get("dsl");
              if (dsl == null) throw new IOException(set + ": line without \"dsl\": " + line);
              Query q = build(dsl);
              int hits = searcher.count(q);
              TopDocs td = searcher.search(q, 10);
              LuceneBench.Json j = new LuceneBench.Json();
              j.str("type", "query").str("set", setName).str("kind", (String) line.get("kind"));
              j.raw("dsl", toJson(dsl));
              j.str("parsed", q.toString()).num("hits", hits);
              j.raw("top", LuceneBench.topJson(td, stored, true));
              if (explainTop > 0) {
                StringBuilder ex = new StringBuilder("[");
                for (int i = 0; i < Math.min(explainTop, td.scoreDocs.length); i++) {
                  ScoreDoc sd = td.scoreDocs[i];
                  int id = stored.document(sd.doc).getField("id").numericValue().intValue();
                  if (i > 0) ex.append(',');
                  ex.append("{\"id\":").append(id).append(",\"tree\":");
                  explanationJson(searcher.explain(q, sd.doc), ex);
                  ex.append('}');
                }
                j.raw("explain", ex.append(']').toString());
              }
              sb.append(j.end()).append('\n');
            }
          }
        }
      }
      if (out.getParent() != null) Files.createDirectories(out.getParent());
      Files.writeString(out, sb.toString(), StandardCharsets.UTF_8);
      LuceneBench.log("wrote %s", out);
    } finally {
      LuceneBench.deleteRecursively(indexDir);
    }
  }

  /** The Lucene query Elasticsearch builds for one DSL node. */
  static Query build(Object node) throws Exception {
    if (node instanceof String s) return LuceneBench.parse(s, "body");
    if (!(node instanceof Map<?, ?> m) || m.size() != 1) {
      throw new IllegalArgumentException("a query is a string or an object with one key: " + node);
    }
    Map.Entry<?, ?> e = m.entrySet().iterator().next();
    String type = (String) e.getKey();
    Map<?, ?> body = (Map<?, ?>) e.getValue();
    Query q =
        switch (type) {
          case "bool" -> bool(body);
          case "dis_max" -> {
            List<Query> subs = new ArrayList<>();
            for (Object sub : list(body.get("queries"))) subs.add(build(sub));
            yield new DisjunctionMaxQuery(subs, num(body, "tie_breaker", 0f));
          }
          case "constant_score" -> new ConstantScoreQuery(build(body.get("filter")));
          case "simple_query_string" -> simpleQueryString(body);
          case "match_phrase_prefix" -> matchPhrasePrefix(body);
          case "boosting" ->
              FunctionScoreQuery.boostByQuery(
                  build(body.get("positive")),
                  build(body.get("negative")),
                  num(body, "negative_boost", Float.NaN));
          default -> throw new IllegalArgumentException("unknown query type " + type);
        };
    float boost = num(body, "boost", 1f);
    return boost == 1f ? q : new BoostQuery(q, boost);
  }

  /**
   * Lucene's SimpleQueryParser (StandardAnalyzer) over {@code fields} ({@code "name^boost"}, in
   * order; default body), {@code default_operator} (or/and) and {@code flags} (Elasticsearch's
   * names joined by |).
   */
  static Query simpleQueryString(Map<?, ?> body) {
    Map<String, Float> weights = new LinkedHashMap<>();
    for (Object f : list(body.get("fields"))) {
      String spec = (String) f;
      int hat = spec.indexOf('^');
      if (hat < 0) weights.put(spec, 1f);
      else weights.put(spec.substring(0, hat), Float.parseFloat(spec.substring(hat + 1)));
    }
    if (weights.isEmpty()) weights.put("body", 1f);
    int flags = -1;
    Object names = body.get("flags");
    if (names != null) {
      flags = 0;
      for (String n : ((String) names).split("\\|")) {
        flags |=
            switch (n.trim().toUpperCase(java.util.Locale.ROOT)) {
              case "ALL" -> -1;
              case "NONE" -> 0;
              case "AND" -> SimpleQueryParser.AND_OPERATOR;
              case "OR" -> SimpleQueryParser.OR_OPERATOR;
              case "NOT" -> SimpleQueryParser.NOT_OPERATOR;
              case "PREFIX" -> SimpleQueryParser.PREFIX_OPERATOR;
              case "PHRASE" -> SimpleQueryParser.PHRASE_OPERATOR;
              case "PRECEDENCE" -> SimpleQueryParser.PRECEDENCE_OPERATORS;
              case "ESCAPE" -> SimpleQueryParser.ESCAPE_OPERATOR;
              case "WHITESPACE" -> SimpleQueryParser.WHITESPACE_OPERATOR;
              case "FUZZY" -> SimpleQueryParser.FUZZY_OPERATOR;
              case "NEAR", "SLOP" -> SimpleQueryParser.NEAR_OPERATOR;
              default -> throw new IllegalArgumentException("unknown flag " + n);
            };
      }
    }
    SimpleQueryParser p = new SimpleQueryParser(new StandardAnalyzer(), weights, flags);
    if ("and".equals(body.get("default_operator"))) p.setDefaultOperator(BooleanClause.Occur.MUST);
    return p.parse((String) body.get("query"));
  }

  /**
   * Elasticsearch's match_phrase_prefix on one field: the text analyzed by StandardAnalyzer into
   * a {@link PhrasePrefixQuery} (positions from the position increments, as
   * TextFieldMapper.createPhrasePrefixQuery), a BoostQuery around it when the field's boost is not
   * 1; no token is zero_terms_query none (a MatchNoDocsQuery).
   */
  static Query matchPhrasePrefix(Map<?, ?> body) throws IOException {
    if (body.size() != 1) throw new IllegalArgumentException("match_phrase_prefix on one field");
    Map.Entry<?, ?> e = body.entrySet().iterator().next();
    String field = (String) e.getKey();
    Map<?, ?> opts = e.getValue() instanceof Map<?, ?> m ? m : Map.of("query", e.getValue());
    String text = (String) opts.get("query");
    int slop = opts.get("slop") == null ? 0 : ((Number) opts.get("slop")).intValue();
    int maxExpansions =
        opts.get("max_expansions") == null ? 50 : ((Number) opts.get("max_expansions")).intValue();
    List<Term[]> arrays = new ArrayList<>();
    List<Integer> positions = new ArrayList<>();
    try (Analyzer analyzer = new StandardAnalyzer();
        TokenStream ts = analyzer.tokenStream(field, text)) {
      TermToBytesRefAttribute term = ts.addAttribute(TermToBytesRefAttribute.class);
      PositionIncrementAttribute inc = ts.addAttribute(PositionIncrementAttribute.class);
      ts.reset();
      int position = -1;
      List<Term> current = new ArrayList<>();
      while (ts.incrementToken()) {
        if (inc.getPositionIncrement() != 0) {
          if (!current.isEmpty()) {
            arrays.add(current.toArray(new Term[0]));
            positions.add(position);
          }
          position += inc.getPositionIncrement();
          current.clear();
        }
        current.add(new Term(field, BytesRef.deepCopyOf(term.getBytesRef())));
      }
      ts.end();
      if (!current.isEmpty()) {
        arrays.add(current.toArray(new Term[0]));
        positions.add(position);
      }
    }
    if (arrays.isEmpty()) return new MatchNoDocsQuery();
    Query q = new PhrasePrefixQuery(field, arrays, positions, slop, maxExpansions);
    float boost = num(opts, "boost", 1f);
    return boost == 1f ? q : new BoostQuery(q, boost);
  }

  /**
   * A phrase whose last position's terms are prefixes, rewritten as Elasticsearch's
   * MultiPhrasePrefixQuery rewrites: the prefixes expand leaf by leaf, in term order within a
   * leaf, into a set that a prefix stops filling at {@code maxExpansions} terms (the next prefix is
   * tried while the set holds at most that many); no expansion matches nothing; otherwise a
   * MultiPhraseQuery of the leading positions and the expansions (sorted here, so that the oracle
   * is the same on every run: Elasticsearch leaves a hash set's order, which changes no score).
   * Renders as Elasticsearch's MultiPhrasePrefixQuery.toString.
   */
  static final class PhrasePrefixQuery extends Query {
    private final String field;
    private final List<Term[]> arrays;
    private final List<Integer> positions;
    private final int slop;
    private final int maxExpansions;

    PhrasePrefixQuery(
        String field, List<Term[]> arrays, List<Integer> positions, int slop, int maxExpansions) {
      this.field = field;
      this.arrays = arrays;
      this.positions = positions;
      this.slop = slop;
      this.maxExpansions = maxExpansions;
    }

    @Override
    public Query rewrite(IndexSearcher searcher) throws IOException {
      int last = arrays.size() - 1;
      MultiPhraseQuery.Builder b = new MultiPhraseQuery.Builder();
      b.setSlop(slop);
      for (int i = 0; i < last; i++) b.add(arrays.get(i), positions.get(i));
      Set<BytesRef> found = new HashSet<>();
      for (Term prefix : arrays.get(last)) {
        expand(found, prefix.bytes(), searcher.getIndexReader());
        if (found.size() > maxExpansions) break;
      }
      if (found.isEmpty()) return new MatchNoDocsQuery();
      Term[] terms = found.stream().sorted().map(t -> new Term(field, t)).toArray(Term[]::new);
      b.add(terms, positions.get(last));
      return b.build();
    }

    private void expand(Set<BytesRef> found, BytesRef prefix, IndexReader reader)
        throws IOException {
      for (LeafReaderContext leaf : reader.leaves()) {
        Terms terms = leaf.reader().terms(field);
        if (terms == null) continue;
        TermsEnum te = terms.iterator();
        if (te.seekCeil(prefix) == TermsEnum.SeekStatus.END) continue;
        for (BytesRef t = te.term(); t != null; t = te.next()) {
          if (!StringHelper.startsWith(t, prefix)) break;
          found.add(BytesRef.deepCopyOf(t));
          if (found.size() >= maxExpansions) return;
        }
      }
    }

    @Override
    public String toString(String f) {
      StringBuilder sb = new StringBuilder();
      if (!field.equals(f)) sb.append(field).append(':');
      sb.append('"');
      for (int i = 0; i < arrays.size(); i++) {
        boolean isLast = i == arrays.size() - 1;
        Term[] ts = arrays.get(i);
        if (i > 0) sb.append(' ');
        if (ts.length > 1) sb.append('(');
        for (int j = 0; j < ts.length; j++) {
          if (j > 0) sb.append(' ');
          sb.append(ts[j].text());
          if (isLast) sb.append('*');
        }
        if (ts.length > 1) sb.append(')');
      }
      sb.append('"');
      if (slop != 0) sb.append('~').append(slop);
      return sb.toString();
    }

    @Override
    public void visit(QueryVisitor visitor) {
      visitor.visitLeaf(this);
    }

    @Override
    public boolean equals(Object o) {
      if (!sameClassAs(o)) return false;
      PhrasePrefixQuery other = (PhrasePrefixQuery) o;
      if (arrays.size() != other.arrays.size()) return false;
      for (int i = 0; i < arrays.size(); i++) {
        if (!Arrays.equals(arrays.get(i), other.arrays.get(i))) return false;
      }
      return field.equals(other.field)
          && positions.equals(other.positions)
          && slop == other.slop
          && maxExpansions == other.maxExpansions;
    }

    @Override
    public int hashCode() {
      int h = Objects.hash(classHash(), field, positions, slop, maxExpansions);
      for (Term[] ts : arrays) h = 31 * h + Arrays.hashCode(ts);
      return h;
    }
  }

  /** Elasticsearch's BoolQueryBuilder: the clauses in must, must_not, should, filter order. */
  static Query bool(Map<?, ?> body) throws Exception {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    String[] keys = {"must", "must_not", "should", "filter"};
    BooleanClause.Occur[] occurs = {
      BooleanClause.Occur.MUST,
      BooleanClause.Occur.MUST_NOT,
      BooleanClause.Occur.SHOULD,
      BooleanClause.Occur.FILTER
    };
    int n = 0;
    for (int i = 0; i < keys.length; i++) {
      for (Object sub : list(body.get(keys[i]))) {
        b.add(build(sub), occurs[i]);
        n++;
      }
    }
    if (n == 0) return new MatchAllDocsQuery();
    Object msm = body.get("minimum_should_match");
    if (msm != null) b.setMinimumNumberShouldMatch(((Number) msm).intValue());
    return b.build();
  }

  static List<?> list(Object v) {
    if (v == null) return List.of();
    if (v instanceof List<?> l) return l;
    return List.of(v);
  }

  static float num(Map<?, ?> m, String key, float def) {
    Object v = m.get(key);
    if (v == null) {
      if (Float.isNaN(def)) throw new IllegalArgumentException("missing " + key + " in " + m);
      return def;
    }
    return ((Number) v).floatValue();
  }

  /**
   * Lucene's explanation as {"match", "value", "description", "details"}; values as
   * Float.toString. A dis_max node's details come in the order of its disjuncts' hash multiset,
   * which changes from run to run: they are written sorted by description, so that the file is
   * the same on every run.
   */
  static void explanationJson(Explanation e, StringBuilder sb) {
    sb.append("{\"match\":").append(e.isMatch()).append(",\"value\":");
    sb.append(Float.toString(e.getValue().floatValue())).append(",\"description\":");
    LuceneBench.Json.quote(sb, e.getDescription());
    sb.append(",\"details\":[");
    Explanation[] details = e.getDetails().clone();
    String d = e.getDescription();
    if (d.equals("max of:") || d.startsWith("max plus ")) {
      Arrays.sort(details, Comparator.comparing(Explanation::getDescription));
    }
    for (int i = 0; i < details.length; i++) {
      if (i > 0) sb.append(',');
      explanationJson(details[i], sb);
    }
    sb.append("]}");
  }

  // ---------------------------------------------------------------- JSON trees

  static List<Map<String, Object>> readLines(Path p) throws IOException {
    List<Map<String, Object>> out = new ArrayList<>();
    try (BufferedReader r = LuceneBench.openText(p)) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isBlank()) continue;
        try (JsonParser jp = LuceneBench.JSON.createParser(line)) {
          jp.nextToken();
          out.add(LuceneStructuredBench.obj(LuceneStructuredBench.readValue(jp)));
        }
      }
    }
    return out;
  }

  /** Compact JSON of a value read by {@link LuceneStructuredBench#readValue}. */
  static String toJson(Object v) {
    StringBuilder sb = new StringBuilder();
    writeJson(v, sb);
    return sb.toString();
  }

  static void writeJson(Object v, StringBuilder sb) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      LuceneBench.Json.quote(sb, s);
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) sb.append(',');
        first = false;
        LuceneBench.Json.quote(sb, (String) e.getKey());
        sb.append(':');
        writeJson(e.getValue(), sb);
      }
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) sb.append(',');
        writeJson(l.get(i), sb);
      }
      sb.append(']');
    } else {
      sb.append(v);
    }
  }

  private LuceneDsl() {}
}
