package quarry.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.lucene104.Lucene104Codec;
import org.apache.lucene.codecs.lucene104.Lucene104HnswScalarQuantizedVectorsFormat;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.quantization.QuantizedByteVectorValues;

/**
 * The {@code vectors} command ({@code quarry-bench vectors}): Lucene HNSW with the same m and
 * ef_construction as every engine, float32 ({@code Lucene99HnswVectorsFormat}) and 7-bit scalar
 * quantized ({@code Lucene104HnswScalarQuantizedVectorsFormat}, SEVEN_BIT; the graph search's
 * scores are the quantized ones, no re-scoring), each built on one thread into one segment (no
 * merges); then a sweep of the query's k (num_candidates, the top 10 kept, as Elasticsearch
 * does) and filtered searches, one query at a time on one thread (no executor). Vectors are the
 * raw little-endian float32 rows quarry-bench reads; DOT_PRODUCT similarity (unit vectors).
 * Recall against quarry-bench's exact answers (rows of k uint32). Prints one JSON object per line.
 */
final class LuceneVectors {
  private LuceneVectors() {}

  static float[][] readF32(Path p, int rows, int dims) throws IOException {
    float[][] out = new float[rows][dims];
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(dims * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (int r = 0; r < rows; r++) {
        b.clear();
        while (b.hasRemaining()) {
          if (ch.read(b) < 0) throw new IOException(p + ": fewer than " + rows + " rows");
        }
        b.flip();
        b.asFloatBuffer().get(out[r]);
      }
    }
    return out;
  }

  static int[][] readTruth(Path p, int rows) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
    int k = b.remaining() / 4 / rows;
    int[][] out = new int[rows][k];
    for (int r = 0; r < rows; r++) for (int i = 0; i < k; i++) out[r][i] = b.getInt();
    return out;
  }

  static long vmRss() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.substring(6).trim().split("\\s+")[0]) * 1024;
        }
      }
    } catch (Exception e) {
      // not Linux
    }
    return -1;
  }

  static long dirBytes(Path p) throws IOException {
    try (Stream<Path> s = Files.list(p)) {
      return s.mapToLong(
              f -> {
                try {
                  return Files.size(f);
                } catch (IOException e) {
                  return 0;
                }
              })
          .sum();
    }
  }

  static double recall(List<int[]> got, int[][] want, int k) {
    long hits = 0, total = 0;
    for (int q = 0; q < want.length; q++) {
      int[] w = want[q];
      int[] g = got.get(q);
      for (int i = 0; i < Math.min(k, w.length); i++) {
        if (w[i] == -1) continue;
        total++;
        for (int j = 0; j < Math.min(k, g.length); j++) {
          if (g[j] == w[i]) {
            hits++;
            break;
          }
        }
      }
    }
    return total == 0 ? 1.0 : (double) hits / total;
  }

  static String summary(double[] lat) {
    double[] s = lat.clone();
    Arrays.sort(s);
    double sum = 0;
    for (double x : s) sum += x;
    return String.format(
        java.util.Locale.ROOT,
        "\"p50_us\": %.3f, \"p99_us\": %.3f, \"mean_us\": %.3f, \"qps\": %.3f",
        pct(s, 50),
        pct(s, 99),
        sum / s.length,
        s.length / (sum / 1e6));
  }

  static double pct(double[] sorted, double p) {
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.max(1, Math.min(sorted.length, rank)) - 1];
  }

  interface Search {
    TopDocs run(int q) throws IOException;
  }

  /** Every query once as a warm-up (the JIT needs a full pass), then timed: rows found, latencies in µs. */
  static List<int[]> timed(int nq, int k, Search s, double[] lat) throws IOException {
    for (int q = 0; q < nq; q++) s.run(q);
    List<int[]> got = new ArrayList<>(nq);
    for (int q = 0; q < nq; q++) {
      long t = System.nanoTime();
      TopDocs td = s.run(q);
      lat[q] = (System.nanoTime() - t) / 1000.0;
      int[] ids = new int[Math.min(k, td.scoreDocs.length)];
      for (int i = 0; i < ids.length; i++) ids[i] = td.scoreDocs[i].doc;
      got.add(ids);
    }
    return got;
  }

  static int bucket(long row) {
    long x = row + 0x9E3779B97F4A7C15L;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    x ^= x >>> 31;
    return (int) Long.remainderUnsigned(x, 100);
  }

  static void cmd(LuceneBench.Args a) throws Exception {
    Path docsPath = Paths.get(a.req("--docs"));
    int n = Integer.parseInt(a.req("--count"));
    Path queriesPath = Paths.get(a.req("--queries"));
    int nq = Integer.parseInt(a.req("--nq"));
    int dims = Integer.parseInt(a.req("--dims"));
    Path truthPath = Paths.get(a.req("--truth"));
    String[] filteredTruth = a.opt("--truth-filtered", "").split(",");
    String[] sels = a.opt("--selectivities", "").split(",");
    int filterCandidates = Integer.parseInt(a.opt("--filter-candidates", "100"));
    int k = Integer.parseInt(a.opt("--k", "10"));
    int m = Integer.parseInt(a.opt("--m", "16"));
    int efc = Integer.parseInt(a.opt("--ef-construction", "100"));
    String[] efs = a.opt("--ef", "10,20,40,80,160,320").split(",");
    Path indexRoot = Paths.get(a.req("--index"));
    String variants = a.opt("--variants", "lucene-hnsw,lucene-hnsw-int7");

    float[][] docs = readF32(docsPath, n, dims);
    float[][] queries = readF32(queriesPath, nq, dims);
    int[][] truth = readTruth(truthPath, nq);
    String version = org.apache.lucene.util.Version.LATEST.toString();

    for (String engine : variants.split(",")) {
      KnnVectorsFormat fmt =
          switch (engine) {
            case "lucene-hnsw" -> new Lucene99HnswVectorsFormat(m, efc);
            case "lucene-hnsw-int7" ->
                new Lucene104HnswScalarQuantizedVectorsFormat(
                    QuantizedByteVectorValues.ScalarEncoding.SEVEN_BIT, m, efc);
            default -> throw new IllegalArgumentException("unknown variant " + engine);
          };
      Codec codec =
          new Lucene104Codec() {
            @Override
            public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
              return fmt;
            }
          };
      Path dir = indexRoot.resolve(engine);
      Files.createDirectories(dir);
      long rss0 = vmRss();
      long t0 = System.nanoTime();
      try (Directory d = FSDirectory.open(dir)) {
        IndexWriterConfig cfg = new IndexWriterConfig();
        cfg.setCodec(codec);
        cfg.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
        cfg.setRAMBufferSizeMB(1900);
        cfg.setMergePolicy(NoMergePolicy.INSTANCE);
        cfg.setUseCompoundFile(false);
        try (IndexWriter w = new IndexWriter(d, cfg)) {
          for (int r = 0; r < n; r++) {
            Document doc = new Document();
            doc.add(new KnnFloatVectorField("v", docs[r], VectorSimilarityFunction.DOT_PRODUCT));
            int b = bucket(r);
            for (String s : sels) {
              if (!s.isEmpty() && b < Integer.parseInt(s)) {
                doc.add(new StringField("tag", "p" + s, Field.Store.NO));
              }
            }
            w.addDocument(doc);
          }
          w.commit();
        }
        double buildSeconds = (System.nanoTime() - t0) / 1e9;
        try (DirectoryReader reader = DirectoryReader.open(d)) {
          LuceneBench.OUT.printf(
              java.util.Locale.ROOT,
              "{\"engine\": \"%s\", \"op\": \"build\", \"version\": \"%s\", \"seconds\": %.3f, \"index_bytes\": %d, \"segments\": %d, \"rss_delta_bytes\": %d, \"threads\": 1, \"note\": \"%s\"}%n",
              engine,
              version,
              buildSeconds,
              dirBytes(dir),
              reader.leaves().size(),
              vmRss() - rss0,
              engine.endsWith("int7") ? "7-bit scalar quantized, scores not re-scored" : "");
          if (reader.leaves().size() != 1) {
            throw new IllegalStateException("expected one segment, got " + reader.leaves().size());
          }
          IndexSearcher searcher = new IndexSearcher(reader);
          searcher.setQueryCache(null);
          double[] lat = new double[nq];
          for (String efS : efs) {
            int ef = Math.max(k, Integer.parseInt(efS.trim()));
            List<int[]> got =
                timed(nq, k, q -> searcher.search(new KnnFloatVectorQuery("v", queries[q], ef), k), lat);
            LuceneBench.OUT.printf(
                java.util.Locale.ROOT,
                "{\"engine\": \"%s\", \"op\": \"sweep\", \"ef\": %d, \"recall\": %.6f, %s}%n",
                engine,
                ef,
                recall(got, truth, k),
                summary(lat));
          }
          for (int i = 0; i < sels.length && i < filteredTruth.length; i++) {
            if (sels[i].isEmpty()) continue;
            int[][] ft = readTruth(Paths.get(filteredTruth[i]), nq);
            Query filter = new TermQuery(new Term("tag", "p" + sels[i]));
            int fc = Math.max(k, filterCandidates);
            List<int[]> got =
                timed(
                    nq,
                    k,
                    q -> searcher.search(new KnnFloatVectorQuery("v", queries[q], fc, filter), k),
                    lat);
            LuceneBench.OUT.printf(
                java.util.Locale.ROOT,
                "{\"engine\": \"%s\", \"op\": \"filtered\", \"selectivity\": %s, \"ef\": %d, \"recall\": %.6f, %s}%n",
                engine,
                sels[i],
                fc,
                recall(got, ft, k),
                summary(lat));
          }
          LuceneBench.OUT.printf(
              java.util.Locale.ROOT,
              "{\"engine\": \"%s\", \"op\": \"rss\", \"rss_delta_bytes\": %d}%n",
              engine,
              vmRss() - rss0);
        }
      }
    }
  }

}
