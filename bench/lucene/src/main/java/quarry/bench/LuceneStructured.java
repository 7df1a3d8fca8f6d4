package quarry.bench;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.core.KeywordAnalyzer;
import org.apache.lucene.analysis.miscellaneous.PerFieldAnalyzerWrapper;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.SortedSetDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.queryparser.classic.ParseException;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.FieldDoc;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchNoDocsQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.SortedSetSelector;
import org.apache.lucene.search.SortedSetSortField;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.Version;

/**
 * {@code oracle-structured}: Lucene's answers to range queries and sorted searches on Reuters
 * with its structured fields ({@code tests/fixtures/lucene-reuters-structured-oracle.jsonl}).
 *
 * <p>Fields: {@code id} = LongPoint + NumericDocValuesField + StoredField; {@code title},
 * {@code body} = TextField (StandardAnalyzer); {@code date} = StringField + SortedDocValuesField;
 * each topic = StringField + SortedSetDocValuesField. One thread, LogByteSizeMergePolicy,
 * forceMerge(1): doc id i is the i-th line of the file.
 *
 * <p>Queries: the classic QueryParser (default field body, default operator OR; StandardAnalyzer,
 * KeywordAnalyzer for date and topics) with {@code id} read as a number (LongPoint exact and range
 * queries, exclusive bounds moved by one, {@code *} open), range bounds of the other fields taken
 * as written (TermRangeQuery; the classic parser's attempt to read bounds as locale dates is
 * skipped) and Elasticsearch query_string's one-sided ranges {@code field:>=x}, {@code >x},
 * {@code <=x}, {@code <x}.
 *
 * <p>Sorts: id = SortField LONG, date = SortField STRING, topics = SortedSetSortField (MIN
 * ascending, MAX descending), all with missing values last in both directions; {@code _score} =
 * FIELD_SCORE; {@code _doc} = index order; FIELD_DOC always breaks ties.
 */
final class LuceneStructured {
  private LuceneStructured() {}

  record SDoc(long id, String title, String body, String date, List<String> topics) {}

  record Key(String field, boolean desc) {}

  record SQuery(String name, String query, List<Key> sort) {}

  static Analyzer analyzer() {
    return new PerFieldAnalyzerWrapper(
        new StandardAnalyzer(), Map.of("date", new KeywordAnalyzer(), "topics", new KeywordAnalyzer()));
  }

  /** The classic parser with {@code id} as a long and Elasticsearch's one-sided ranges. */
  static final class Parser extends QueryParser {
    Parser() {
      super("body", analyzer());
      setDefaultOperator(QueryParser.Operator.OR);
      setLocale(Locale.ROOT);
    }

    @Override
    protected Query getFieldQuery(String field, String queryText, boolean quoted) throws ParseException {
      // Elasticsearch QueryStringQueryParser.getFieldQuery: field:>x, >=x, <x, <=x.
      if (!quoted && queryText.length() > 1) {
        if (queryText.charAt(0) == '>') {
          if (queryText.length() > 2 && queryText.charAt(1) == '=') {
            return getRangeQuery(field, open(queryText.substring(2)), null, true, true);
          }
          return getRangeQuery(field, open(queryText.substring(1)), null, false, true);
        } else if (queryText.charAt(0) == '<') {
          if (queryText.length() > 2 && queryText.charAt(1) == '=') {
            return getRangeQuery(field, null, open(queryText.substring(2)), true, true);
          }
          return getRangeQuery(field, null, open(queryText.substring(1)), true, false);
        }
      }
      if (field.equals("id")) return LongPoint.newExactQuery("id", number(queryText));
      return super.getFieldQuery(field, queryText, quoted);
    }

    private static String open(String bound) {
      return bound.equals("*") ? null : bound;
    }

    private static long number(String text) throws ParseException {
      try {
        return Long.parseLong(text.trim());
      } catch (NumberFormatException e) {
        throw new ParseException("not a number for id: " + text);
      }
    }

    @Override
    protected Query getRangeQuery(String field, String part1, String part2, boolean startInclusive, boolean endInclusive)
        throws ParseException {
      if (field.equals("id")) {
        long lo = Long.MIN_VALUE;
        long hi = Long.MAX_VALUE;
        if (part1 != null) {
          lo = number(part1);
          if (!startInclusive) {
            if (lo == Long.MAX_VALUE) return new MatchNoDocsQuery("empty id range");
            lo++;
          }
        }
        if (part2 != null) {
          hi = number(part2);
          if (!endInclusive) {
            if (hi == Long.MIN_VALUE) return new MatchNoDocsQuery("empty id range");
            hi--;
          }
        }
        return LongPoint.newRangeQuery("id", lo, hi);
      }
      // TermRangeQuery on the bounds as written (normalized by the field's analyzer).
      return newRangeQuery(field, part1, part2, startInclusive, endInclusive);
    }
  }

  static Sort sort(List<Key> keys) {
    List<SortField> fields = new ArrayList<>();
    for (Key k : keys) {
      SortField sf;
      switch (k.field) {
        case "id" -> {
          sf = new SortField("id", SortField.Type.LONG, k.desc);
          sf.setMissingValue(k.desc ? Long.MIN_VALUE : Long.MAX_VALUE);
        }
        case "date" -> {
          sf = new SortField("date", SortField.Type.STRING, k.desc);
          sf.setMissingValue(k.desc ? SortField.STRING_FIRST : SortField.STRING_LAST);
        }
        case "topics" -> {
          sf =
              new SortedSetSortField(
                  "topics", k.desc, k.desc ? SortedSetSelector.Type.MAX : SortedSetSelector.Type.MIN);
          sf.setMissingValue(k.desc ? SortField.STRING_FIRST : SortField.STRING_LAST);
        }
        case "_score" -> sf = k.desc ? SortField.FIELD_SCORE : new SortField(null, SortField.Type.SCORE, true);
        case "_doc" -> sf = k.desc ? new SortField(null, SortField.Type.DOC, true) : SortField.FIELD_DOC;
        default -> throw new IllegalArgumentException("cannot sort by " + k.field);
      }
      fields.add(sf);
    }
    fields.add(SortField.FIELD_DOC);
    return new Sort(fields.toArray(new SortField[0]));
  }

  static void cmd(LuceneBench.Args a) throws Exception {
    Path input = Paths.get(a.req("--input"));
    Path queries = Paths.get(a.req("--queries"));
    Path out = Paths.get(a.req("--out"));
    String indexOpt = a.opt("--index", null);
    a.done();

    List<SDoc> docs = loadDocs(input);
    List<SQuery> qs = loadQueries(queries);
    LuceneBench.log("loaded %d docs, %d queries", docs.size(), qs.size());
    Path indexDir = indexOpt != null ? Paths.get(indexOpt) : Files.createTempDirectory("lucene-structured-");
    try {
      StringBuilder sb = new StringBuilder();
      try (Directory dir = FSDirectory.open(indexDir)) {
        LuceneBench.writeOneSegment(
            dir, analyzer(), docs.stream().map(LuceneStructured::toLucene).toList());
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
          IndexSearcher searcher = LuceneBench.oneSegmentSearcher(reader);
          StoredFields stored = searcher.storedFields();
          for (int i = 0; i < docs.size(); i++) {
            long id = stored.document(i).getField("id").numericValue().longValue();
            if (id != docs.get(i).id) throw new IllegalStateException("doc order != file order at " + i);
          }
          LuceneBench.Json st = new LuceneBench.Json();
          st.str("type", "stats").str("lucene", Version.LATEST.toString()).num("docs", reader.numDocs());
          sb.append(st.end()).append('\n');

          for (SQuery s : qs) {
            Query q = new Parser().parse(s.query);
            int hits = searcher.count(q);
            TopDocs td;
            if (s.sort == null) {
              td = searcher.search(q, 10);
            } else {
              td = searcher.search(q, 10, sort(s.sort), true);
            }
            LuceneBench.Json j = new LuceneBench.Json();
            j.str("type", "query");
            if (s.name != null) j.str("name", s.name);
            j.str("query", s.query);
            if (s.sort != null) j.raw("sort", sortJson(s.sort));
            j.str("parsed", q.toString()).num("hits", hits);
            j.raw("top", topJson(td, stored, s.sort == null ? 0 : s.sort.size()));
            sb.append(j.end()).append('\n');
          }
        }
      }
      if (out.getParent() != null) Files.createDirectories(out.getParent());
      Files.writeString(out, sb.toString(), StandardCharsets.UTF_8);
      LuceneBench.log("wrote %s", out);
    } finally {
      if (indexOpt == null) LuceneBench.deleteRecursively(indexDir);
    }
  }

  static Document toLucene(SDoc d) {
    Document doc = new Document();
    doc.add(new LongPoint("id", d.id));
    doc.add(new NumericDocValuesField("id", d.id));
    doc.add(new StoredField("id", d.id));
    if (d.title != null) doc.add(new TextField("title", d.title, Field.Store.NO));
    if (d.body != null) doc.add(new TextField("body", d.body, Field.Store.NO));
    if (d.date != null) {
      doc.add(new StringField("date", d.date, Field.Store.NO));
      doc.add(new SortedDocValuesField("date", new BytesRef(d.date)));
    }
    for (String t : d.topics) {
      doc.add(new StringField("topics", t, Field.Store.NO));
      doc.add(new SortedSetDocValuesField("topics", new BytesRef(t)));
    }
    return doc;
  }

  static String sortJson(List<Key> keys) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < keys.size(); i++) {
      if (i > 0) sb.append(',');
      sb.append("{\"field\":");
      LuceneBench.Json.quote(sb, keys.get(i).field);
      sb.append(",\"desc\":").append(keys.get(i).desc).append('}');
    }
    return sb.append(']').toString();
  }

  /** [{"id","score","sort"?}]: the first {@code nKeys} sort values of each hit. */
  static String topJson(TopDocs td, StoredFields stored, int nKeys) throws IOException {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < td.scoreDocs.length; i++) {
      ScoreDoc sd = td.scoreDocs[i];
      if (i > 0) sb.append(',');
      long id = stored.document(sd.doc).getField("id").numericValue().longValue();
      sb.append("{\"id\":").append(id).append(",\"score\":").append(Float.toString(sd.score));
      if (nKeys > 0) {
        Object[] fields = ((FieldDoc) sd).fields;
        sb.append(",\"sort\":[");
        for (int k = 0; k < nKeys; k++) {
          if (k > 0) sb.append(',');
          Object v = fields[k];
          if (v == null) sb.append("null");
          else if (v instanceof BytesRef b) LuceneBench.Json.quote(sb, b.utf8ToString());
          else if (v instanceof Float f) sb.append(Float.toString(f));
          else if (v instanceof Long || v instanceof Integer) sb.append(v);
          else throw new IllegalStateException("unexpected sort value " + v.getClass());
        }
        sb.append(']');
      }
      sb.append('}');
    }
    return sb.append(']').toString();
  }

  static List<SDoc> loadDocs(Path p) throws IOException {
    List<SDoc> docs = new ArrayList<>();
    try (BufferedReader r = LuceneBench.openText(p)) {
      String line;
      int lineNo = 0;
      while ((line = r.readLine()) != null) {
        lineNo++;
        if (line.isBlank()) continue;
        Long id = null;
        String title = null, body = null, date = null;
        List<String> topics = new ArrayList<>();
        try (JsonParser jp = LuceneBench.JSON.createParser(line)) {
          if (jp.nextToken() != JsonToken.START_OBJECT) throw new IOException(p + ":" + lineNo + ": not an object");
          while (jp.nextToken() == JsonToken.FIELD_NAME) {
            String key = jp.currentName();
            JsonToken v = jp.nextToken();
            switch (key) {
              case "id" -> id = jp.getLongValue();
              case "title" -> title = v == JsonToken.VALUE_NULL ? null : jp.getText();
              case "body" -> body = v == JsonToken.VALUE_NULL ? null : jp.getText();
              case "date" -> date = v == JsonToken.VALUE_NULL ? null : jp.getText();
              case "topics" -> {
                if (v == JsonToken.START_ARRAY) {
                  while (jp.nextToken() != JsonToken.END_ARRAY) topics.add(jp.getText());
                } else if (v == JsonToken.VALUE_STRING) {
                  topics.add(jp.getText());
                }
              }
              default -> jp.skipChildren();
            }
          }
        }
        if (id == null) throw new IOException(p + ":" + lineNo + ": missing integer id");
        docs.add(new SDoc(id, title, body, date, topics));
      }
    }
    return docs;
  }

  /** {"name"?, "query", "sort"?: [{"field", "desc"?}]} per line. */
  static List<SQuery> loadQueries(Path p) throws IOException {
    List<SQuery> qs = new ArrayList<>();
    try (BufferedReader r = LuceneBench.openText(p)) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isBlank()) continue;
        String name = null, query = null;
        List<Key> sort = null;
        try (JsonParser jp = LuceneBench.JSON.createParser(line)) {
          if (jp.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object: " + line);
          while (jp.nextToken() == JsonToken.FIELD_NAME) {
            String key = jp.currentName();
            JsonToken v = jp.nextToken();
            switch (key) {
              case "name" -> name = jp.getText();
              case "query" -> query = jp.getText();
              case "sort" -> {
                if (v == JsonToken.VALUE_NULL) break;
                if (v != JsonToken.START_ARRAY) throw new IOException("\"sort\" is not an array: " + line);
                sort = new ArrayList<>();
                while (jp.nextToken() == JsonToken.START_OBJECT) {
                  String field = null;
                  boolean desc = false;
                  while (jp.nextToken() == JsonToken.FIELD_NAME) {
                    String k = jp.currentName();
                    JsonToken kv = jp.nextToken();
                    switch (k) {
                      case "field" -> field = jp.getText();
                      case "desc" -> desc = kv == JsonToken.VALUE_TRUE;
                      default -> jp.skipChildren();
                    }
                  }
                  if (field == null) throw new IOException("sort key without \"field\": " + line);
                  sort.add(new Key(field, desc));
                }
              }
              default -> jp.skipChildren();
            }
          }
        }
        if (query == null) throw new IOException(p + ": line without \"query\": " + line);
        qs.add(new SQuery(name, query, sort));
      }
    }
    return qs;
  }
}
