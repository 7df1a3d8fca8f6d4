package quarry.bench;

import java.io.IOException;
import java.text.BreakIterator;
import java.util.Locale;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.uhighlight.DefaultPassageFormatter;
import org.apache.lucene.search.uhighlight.LengthGoalBreakIterator;
import org.apache.lucene.search.uhighlight.UnifiedHighlighter;

/**
 * The {@code top10_highlight} mode's highlighter: Lucene's UnifiedHighlighter as Elasticsearch's
 * default {@code unified} highlighter uses it on a text field indexed without offsets or term
 * vectors (the benchmark's schema): offsets from re-analysis of the stored text (the
 * {@code ANALYSIS} offset source, which the highlighter picks by itself for such a field), the
 * default flags (phrases strictly, multi-term queries, weight matches), 5 passages, {@code <em>}
 * tags, sentences grouped towards 100 characters from the match on ({@code LengthGoalBreakIterator}
 * with alignment 0, the closest of Lucene's iterators to Elasticsearch's bounded sentence scanner). The stored fields of the hits
 * are read by {@code highlight} itself, inside the timed span.
 */
final class LuceneHighlight {
  /** Elasticsearch's defaults: number_of_fragments 5, fragment_size 100. */
  static final int PASSAGES = 5;

  static final int FRAGMENT_SIZE = 100;

  private final UnifiedHighlighter highlighter;
  private final String field;

  LuceneHighlight(IndexSearcher searcher, String field) {
    this.field = field;
    this.highlighter =
        UnifiedHighlighter.builder(searcher, new StandardAnalyzer())
            .withBreakIterator(
                () ->
                    LengthGoalBreakIterator.createClosestToLength(
                        BreakIterator.getSentenceInstance(Locale.ROOT), FRAGMENT_SIZE, 0f))
            .withFormatter(new DefaultPassageFormatter("<em>", "</em>", " ... ", false))
            .build();
  }

  /** Highlights the field of every hit of {@code td}; returns the characters made. */
  long highlight(Query q, TopDocs td) throws IOException {
    long chars = 0;
    for (String s : highlighter.highlight(field, q, td, PASSAGES)) {
      if (s != null) chars += s.length();
    }
    return chars;
  }
}
