import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.*;
import java.io.*;
import java.util.*;

/**
 * Writes random strings and Lucene's StandardAnalyzer tokens for them as JSON lines, for the
 * ignored test `lucene_differential_cases` in tests/analyzer_reuters.rs.
 *
 * Run: java -cp lucene-core-10.x.jar:. LuceneCases ../tables.rs N SEED OUT.jsonl
 * (characters are drawn from every flag class of tables.rs, plus tricky specials and random
 * code points; a third of the cases use a small max token length), then
 *   QUARRY_LUCENE_CASES=OUT.jsonl cargo test -p quarry --release --test analyzer_reuters -- --ignored
 */
public class LuceneCases {
  static String esc(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') b.append(ch);
      else b.append(String.format("\\u%04x", (int) ch));
    }
    return b.append('"').toString();
  }
  public static void main(String[] a) throws Exception {
    int n = Integer.parseInt(a[1]);
    Random r = new Random(Long.parseLong(a[2]));
    // pools by flag bit from ranges.txt
    List<int[]> ranges = new ArrayList<>();
    String src = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(a[0])), "UTF-8");
    src = src.substring(src.indexOf("RANGES"), src.indexOf("LOWER"));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\((0x[0-9a-f]+),(0x[0-9a-f]+),(0x[0-9a-f]+)\\)").matcher(src);
    while (m.find())
      ranges.add(new int[]{Integer.decode(m.group(1)), Integer.decode(m.group(2)), Integer.decode(m.group(3))});
    List<List<Integer>> pools = new ArrayList<>();
    for (int bit = 0; bit < 20; bit++) {
      List<Integer> pool = new ArrayList<>();
      for (int[] rg : ranges) if ((rg[2] & (1 << bit)) != 0)
        for (int c = rg[0]; c <= rg[1] && c < rg[0] + 40; c++) pool.add(c);
      if (!pool.isEmpty()) pools.add(pool);
    }
    int[] special = {0x200D, 0xFE0F, 0xFE0E, 0x20E3, '#', '*', '0', '1', 0xE0067, 0xE007F, 0x1F3FB, 0x1F1E6, 0x1F1FA,
      0x1F468, 0x1F469, 0x2764, 0xA9, 0x130, 0x3A3, 0x3C2, 0xDF, 0x5D0, 0x5D1, '"', '\'', '.', ',', ':', ';', '_', '-', ' ',
      0x0301, 0x00AD, 0x200B, 0x3005, 0x30FC, 0x3042, 0x30A2, 0x4E00, 0xAC00, 0x1100, 0x0E01, 0x0E31, 0xFF10, 0xFF21, 0x1D400, 0x10400,
      0x2018, 0x2019, 0x2024, 0xFE52, 0xFF0E, 0x1F600, 0x24C2, 0x3030, 0x10FFFF, 0xE000, 0x0085, 0x2028, '\n', '\r'};
    PrintStream out = new PrintStream(new FileOutputStream(a[3]), false, "UTF-8");
    int[] maxes = {1, 2, 3, 4, 5, 7, 10, 255};
    for (int i = 0; i < n; i++) {
      int len = r.nextInt(r.nextInt(10) == 0 ? 400 : 25);
      StringBuilder sb = new StringBuilder();
      int mode = r.nextInt(4);
      for (int j = 0; j < len; j++) {
        int k = r.nextInt(10);
        int c;
        if (mode == 0 && k < 6) c = "aZ0_.'".charAt(r.nextInt(6));
        else if (k < 4) { List<Integer> p = pools.get(r.nextInt(pools.size())); c = p.get(r.nextInt(p.size())); }
        else if (k < 8) c = special[r.nextInt(special.length)];
        else if (k < 9) c = "abcXYZ0129 .,;:'\"_-@/".charAt(r.nextInt(21));
        else { do { c = r.nextInt(0x30000); } while (c >= 0xD800 && c <= 0xDFFF); }
        sb.appendCodePoint(c);
      }
      String s = sb.toString();
      int max = r.nextInt(3) == 0 ? maxes[r.nextInt(maxes.length)] : 255;
      StandardAnalyzer an = new StandardAnalyzer();
      an.setMaxTokenLength(max);
      StringBuilder toks = new StringBuilder("[");
      try (TokenStream ts = an.tokenStream("f", s)) {
        CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
        ts.reset();
        boolean first = true;
        while (ts.incrementToken()) { if (!first) toks.append(','); first = false; toks.append(esc(t.toString())); }
        ts.end();
      }
      toks.append(']');
      out.println("{\"max\":" + max + ",\"text\":" + esc(s) + ",\"tokens\":" + toks + "}");
    }
    out.close();
  }
}
