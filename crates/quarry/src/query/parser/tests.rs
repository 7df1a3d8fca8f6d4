//! The parser's unit tests: syntax, Lucene's semantics quirk by quirk, errors and limits.
use super::escapes::{java_parse_float, unescape_str};
use super::grammar::SUPPORTED;
use super::lexer::{lex, Kind};
use super::*;
use crate::query::ast::{java_float_to_string, Clause};
use proptest::prelude::*;

/// SimpleAnalysis plus the stop word "the" and the unknown field "nope".
#[derive(Debug)]
struct StopAnalysis;

impl FieldAnalysis for StopAnalysis {
    fn tokens(&self, field: &str, text: &str) -> Vec<String> {
        let mut t = SimpleAnalysis.tokens(field, text);
        t.retain(|w| w != "the");
        t
    }
    fn normalize(&self, field: &str, text: &str) -> String {
        SimpleAnalysis.normalize(field, text)
    }
    fn has_field(&self, field: &str) -> bool {
        field != "nope"
    }
}

fn parser() -> QueryParser {
    QueryParser::new("body", Arc::new(StopAnalysis))
}

fn p(input: &str) -> String {
    match parser().parse(input) {
        Ok(q) => q.to_string(),
        Err(e) => panic!("{input:?} failed: {e}"),
    }
}

fn p_and(input: &str) -> String {
    parser()
        .with_default_operator(Operator::And)
        .parse(input)
        .unwrap()
        .to_string()
}

fn multi() -> QueryParser {
    QueryParser::with_default_fields(vec!["title".into(), "body".into()], Arc::new(StopAnalysis))
}

fn err(input: &str) -> ParseError {
    err_with(&parser(), input)
}

fn err_with(qp: &QueryParser, input: &str) -> ParseError {
    match qp.parse(input) {
        Ok(q) => panic!("{input:?} parsed as {q}"),
        Err(e) => e,
    }
}

#[test]
fn terms_and_fields() {
    assert_eq!(p("oil"), "body:oil");
    assert_eq!(p("OIL"), "body:oil");
    assert_eq!(p("title:oil"), "title:oil");
    assert_eq!(p("title: oil"), "title:oil");
    assert_eq!(p("title:(oil gas)"), "title:oil title:gas");
    assert_eq!(p("+title:(oil gas) x"), "+(title:oil title:gas) body:x");
    assert_eq!(p("title:(oil body:gas)"), "title:oil body:gas");
    assert_eq!(p("my\\ field:x"), "my field:x");
    assert_eq!(p("oil gas"), "body:oil body:gas");
    assert_eq!(p("a b c d"), "body:a body:b body:c body:d");
    assert_eq!(p("1987"), "body:1987");
    assert_eq!(p("u.s."), "body:u.s");
}

#[test]
fn boolean_operators() {
    assert_eq!(p("oil AND price"), "+body:oil +body:price");
    assert_eq!(p("oil && price"), "+body:oil +body:price");
    assert_eq!(p("trade OR export"), "body:trade body:export");
    assert_eq!(p("trade || export"), "body:trade body:export");
    assert_eq!(p("+increase +tax"), "+body:increase +body:tax");
    assert_eq!(
        p("+decline nkr -range"),
        "+body:decline body:nkr -body:range"
    );
    assert_eq!(p("-a b"), "-body:a body:b");
    assert_eq!(p("a NOT b"), "body:a -body:b");
    assert_eq!(p("a !b"), "body:a -body:b");
    assert_eq!(p("a!b"), "body:a -body:b");
    assert_eq!(p("a AND NOT b"), "+body:a -body:b");
    assert_eq!(p("NOT a"), "-body:a");
    assert_eq!(p("!a"), "-body:a");
    assert_eq!(p("-a"), "-body:a");
    assert_eq!(p("+a"), "+body:a");
    assert_eq!(p("NOT a AND b"), "-body:a +body:b");
    assert_eq!(p("a OR NOT b"), "body:a -body:b");
    assert_eq!(
        p("to AND be AND or AND not"),
        "+body:to +body:be +body:or +body:not"
    );
    // Lucene's addClause: AND makes the previous clause required.
    assert_eq!(p("a AND b OR c"), "+body:a +body:b body:c");
    assert_eq!(p("a OR b AND c"), "body:a +body:b +body:c");
    assert_eq!(p("a && b || c"), "+body:a +body:b body:c");
    assert_eq!(p("-a AND b"), "-body:a +body:b");
}

#[test]
fn default_operator_and() {
    assert_eq!(p_and("a b"), "+body:a +body:b");
    assert_eq!(p_and("a OR b"), "body:a body:b");
    assert_eq!(p_and("a AND b OR c"), "+body:a body:b body:c");
    assert_eq!(p_and("-a OR b"), "-body:a body:b");
    assert_eq!(p_and("+a OR b"), "body:a body:b");
    assert_eq!(p_and("a -b c"), "+body:a -body:b +body:c");
    assert_eq!(p_and("wi-fi"), "+body:wi +body:fi");
    assert_eq!(p_and("x wi-fi"), "+body:x +body:wi +body:fi");
    assert_eq!(p_and("a"), "body:a");
}

#[test]
fn parentheses() {
    assert_eq!(p("(a)"), "body:a");
    assert_eq!(p("((a))"), "body:a");
    assert_eq!(p("(a b)"), "body:a body:b");
    assert_eq!(p("+(a b)"), "+(body:a body:b)");
    assert_eq!(p("(a (b c))"), "body:a (body:b body:c)");
    assert_eq!(
        p("a (b -c) +(d AND e)"),
        "body:a (body:b -body:c) +(+body:d +body:e)"
    );
    assert_eq!(p("(+a)"), "+body:a");
    assert_eq!(p("x (+a)"), "body:x (+body:a)");
}

#[test]
fn phrases() {
    assert_eq!(p("\"oil prices\""), "body:\"oil prices\"");
    assert_eq!(p("\"to be or not to be\""), "body:\"to be or not to be\"");
    assert_eq!(p("\"oil prices\"~2"), "body:\"oil prices\"~2");
    assert_eq!(p("\"oil prices\"~2.7"), "body:\"oil prices\"~2");
    assert_eq!(p("\"oil prices\"~"), "body:\"oil prices\"");
    assert_eq!(p("\"oil prices\"~x"), "body:\"oil prices\"");
    assert_eq!(p("\"oil prices\"~1e1"), "body:\"oil prices\"~10");
    assert_eq!(
        p("\"oil prices\"~Infinity"),
        "body:\"oil prices\"~2147483647"
    );
    assert_eq!(p("\"oil\""), "body:oil");
    assert_eq!(p("\"oil\"~2"), "body:oil");
    assert_eq!(p("\"oil\"~-2"), "body:oil");
    assert_eq!(p("\"the\""), "");
    assert_eq!(p("\"Oil, Prices!\""), "body:\"oil prices\"");
    assert_eq!(p("title:\"oil prices\""), "title:\"oil prices\"");
    assert_eq!(p("\"a \\\"quoted\\\" b\""), "body:\"a quoted b\"");
    assert_eq!(p("\"oil prices\"^2"), "(body:\"oil prices\")^2.0");
    assert_eq!(p("\"a b\"~2^3"), "(body:\"a b\"~2)^3.0");
    assert_eq!(p("\"a b\"^3~2"), "(body:\"a b\"~2)^3.0");
    assert_eq!(p("x \"a b\" y"), "body:x body:\"a b\" body:y");
    let slop = parser().with_phrase_slop(3);
    assert_eq!(slop.parse("\"a b\"").unwrap().to_string(), "body:\"a b\"~3");
    assert_eq!(
        slop.parse("\"a b\"~1").unwrap().to_string(),
        "body:\"a b\"~1"
    );
    // Phrase positions come from the analysis.
    let q = parser().parse("\"x y z\"").unwrap();
    assert_eq!(
        q,
        Query::Phrase {
            field: "body".into(),
            terms: vec![(0, "x".into()), (1, "y".into()), (2, "z".into())],
            slop: 0
        }
    );
}

#[test]
fn prefixes() {
    assert_eq!(p("oil*"), "body:oil*");
    assert_eq!(p("OIL*"), "body:oil*");
    assert_eq!(p("Wi-Fi*"), "body:wi-fi*");
    assert_eq!(p("title:Oil*"), "title:oil*");
    assert_eq!(p("oil* gas"), "body:oil* body:gas");
    assert_eq!(p("a\\*b*"), "body:a*b*");
    // Lucene ignores a fuzzy suffix on a prefix term.
    assert_eq!(p("foo*~2"), "body:foo*");
    assert_eq!(p("foo*^2"), "(body:foo*)^2.0");
    assert_eq!(p("AND*"), "body:and*");
}

#[test]
fn boosts() {
    assert_eq!(p("oil^2"), "(body:oil)^2.0");
    assert_eq!(p("oil^2.5"), "(body:oil)^2.5");
    assert_eq!(p("oil^0.1"), "(body:oil)^0.1");
    assert_eq!(p("oil^0"), "(body:oil)^0.0");
    assert_eq!(p("oil^10000000"), "(body:oil)^1.0E7");
    assert_eq!(p("(a b)^0.5"), "(body:a body:b)^0.5");
    assert_eq!(p("(a^2)^3"), "((body:a)^2.0)^3.0");
    assert_eq!(p("x oil^2"), "body:x (body:oil)^2.0");
    assert_eq!(p("+oil^2"), "+(body:oil)^2.0");
    assert_eq!(p("title:(a b)^2"), "(title:a title:b)^2.0");
    // A NUMBER is digits[.digits]; the rest is lexed again.
    assert_eq!(p("a^2."), "(body:a)^2.0");
    assert_eq!(p("a^2.x"), "(body:a)^2.0 body:x");
    // A boost on an analyzed-away clause is dropped.
    assert_eq!(p("the^2 a"), "body:a");
    assert_eq!(
        p("(the)^99999999999999999999999999999999999999999 a"),
        "body:a"
    );
    let q = parser().parse("oil^1.5").unwrap();
    assert_eq!(q, Query::boosted(Query::term("body", "oil"), 1.5));
}

#[test]
fn match_all() {
    assert_eq!(p("*:*"), "*:*");
    assert_eq!(parser().parse("*:*").unwrap(), Query::MatchAll);
    assert_eq!(p("*:*^2"), "(*:*)^2.0");
    assert_eq!(p("-*:*"), "-*:*");
    assert_eq!(p("+*:* -oil"), "+*:* -body:oil");
    assert_eq!(p("*:(*)"), "*:*");
    // A field named '*' with a plain term is a term on field '*' (as in Lucene).
    assert_eq!(p("*:oil"), "*:oil");
}

#[test]
fn analysis_effects() {
    assert_eq!(p("wi-fi"), "body:wi body:fi");
    assert_eq!(p("x wi-fi"), "body:x body:wi body:fi");
    assert_eq!(p("x AND wi-fi"), "+body:x +(body:wi body:fi)");
    assert_eq!(p("+wi-fi"), "+(body:wi body:fi)");
    let split = parser().with_split_on_whitespace(true);
    assert_eq!(
        split.parse("x wi-fi").unwrap().to_string(),
        "body:x (body:wi body:fi)"
    );
    assert_eq!(split.parse("a b").unwrap().to_string(), "body:a body:b");
    assert_eq!(split.parse("the a").unwrap().to_string(), "body:a");
    // Words that analyze to nothing drop their clause.
    assert_eq!(p("the"), "");
    assert!(parser().parse("the").unwrap().is_empty_boolean());
    assert_eq!(p("the oil"), "body:oil");
    assert_eq!(
        parser().parse("the oil").unwrap(),
        Query::term("body", "oil")
    );
    assert_eq!(p("the AND a"), "+body:a");
    assert_eq!(p("a AND the"), "body:a");
    assert_eq!(p("a AND the AND b"), "+body:a +body:b");
    assert_eq!(p("(the) a"), "body:a");
    assert_eq!(p("-the"), "");
    // Operator followed by whitespace is a term of its own (Lucene's BAREOPER).
    assert_eq!(p("a + b"), "body:a body:b");
    assert_eq!(p("a - b"), "body:a body:b");
    assert_eq!(p("a ! b"), "body:a body:b");
    assert_eq!(p("&&x"), "body:x");
    assert_eq!(p("a . b"), "body:a body:b");
}

#[test]
fn multi_term_runs_nest_like_lucene_10_6() {
    // Each rendering was produced by Lucene 10.6.0's classic QueryParser (default field
    // body, operator OR, StandardAnalyzer) through bench/lucene's oracle command.
    let cases = [
        (
            "+energy oil gas coal",
            "+body:energy (body:oil body:gas body:coal)",
        ),
        ("oil gas -coal", "(body:oil body:gas) -body:coal"),
        ("-coal oil gas", "-body:coal (body:oil body:gas)"),
        ("oil gas AND coal", "body:oil +body:gas +body:coal"),
        ("oil gas coal", "body:oil body:gas body:coal"),
        ("x wi-fi", "body:x body:wi body:fi"),
        ("x wi-fi -y", "(body:x body:wi body:fi) -body:y"),
        ("title:x oil gas", "title:x (body:oil body:gas)"),
        ("oil gas title:x", "(body:oil body:gas) title:x"),
        ("(oil gas) coal", "(body:oil body:gas) body:coal"),
        ("oil gas (coal)", "(body:oil body:gas) body:coal"),
        (
            "a b \"c d\" e f",
            "(body:a body:b) body:\"c d\" (body:e body:f)",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parser().parse(input).unwrap().to_string(), want, "{input}");
    }
}

#[test]
fn term_runs_follow_lucene_multi_term_lookahead() {
    // A run of plain terms is analyzed as one text; it stops before a term followed by
    // ':', '*', '~', '^', AND or OR. Expected strings checked against Lucene 10.6.0.
    assert_eq!(p("a b:c"), "body:a b:c");
    assert_eq!(p("a wi-fi b^2"), "(body:a body:wi body:fi) (body:b)^2.0");
    assert_eq!(p("x wi-fi AND y"), "body:x +(body:wi body:fi) +body:y");
    assert_eq!(p("a b AND c"), "body:a +body:b +body:c");
    assert_eq!(p("x AND a b c"), "+body:x +body:a (body:b body:c)");
    assert_eq!(p("-a wi-fi c"), "-body:a (body:wi body:fi body:c)");
    assert_eq!(p("title:(wi-fi x)"), "title:wi title:fi title:x");
    assert_eq!(p("a b *:*"), "body:a body:b *:*");
    let q = parser().parse("a wi-fi").unwrap();
    assert_eq!(
        q,
        Query::boolean(
            ["a", "wi", "fi"]
                .iter()
                .map(|t| Clause::new(Occur::Should, Query::term("body", *t)))
                .collect()
        )
    );
}

#[test]
fn escapes() {
    assert_eq!(unescape_str("", "a\\:b", 0).unwrap(), "a:b");
    assert_eq!(unescape_str("", "\\u0041b", 0).unwrap(), "Ab");
    assert_eq!(unescape_str("", "\\\\", 0).unwrap(), "\\");
    assert_eq!(unescape_str("", "\\uD83D\\uDE00", 0).unwrap(), "\u{1F600}");
    assert_eq!(unescape_str("", "\\uD83D", 0).unwrap(), "\u{FFFD}");
    assert_eq!(p("\\(a\\)"), "body:a");
    assert_eq!(p("\\u0041BC"), "body:abc");
    assert_eq!(p("\\AND"), "body:and");
    assert_eq!(p("a\\ b"), "body:a body:b");
    assert_eq!(p("title\\:x"), "body:title body:x");
}

#[test]
fn multi_field() {
    let m = multi();
    let s = |q: &str| m.parse(q).unwrap().to_string();
    assert_eq!(s("oil"), "title:oil body:oil");
    assert_eq!(s("oil gas"), "(title:oil body:oil) (title:gas body:gas)");
    assert_eq!(
        s("oil AND gas"),
        "+(title:oil body:oil) +(title:gas body:gas)"
    );
    assert_eq!(s("wi-fi"), "(title:wi body:wi) (title:fi body:fi)");
    assert_eq!(
        s("\"oil prices\"~1"),
        "title:\"oil prices\"~1 body:\"oil prices\"~1"
    );
    assert_eq!(s("oil*"), "title:oil* body:oil*");
    assert_eq!(s("x:oil"), "x:oil");
    assert_eq!(s("the"), "");
    assert_eq!(s("*:*"), "*:*");
    let and = multi().with_default_operator(Operator::And);
    assert_eq!(
        and.parse("oil gas").unwrap().to_string(),
        "+(title:oil body:oil) +(title:gas body:gas)"
    );
    let boosted = multi().with_field_boost("title", 2.0);
    let b = |q: &str| boosted.parse(q).unwrap().to_string();
    assert_eq!(b("oil"), "(title:oil)^2.0 body:oil");
    assert_eq!(b("\"a b\"~1"), "(title:\"a b\"~1)^2.0 body:\"a b\"~1");
    // Lucene applies the boost to explicit-field prefix queries, not to terms.
    assert_eq!(b("title:oil*"), "(title:oil*)^2.0");
    assert_eq!(b("title:oil"), "title:oil");
}

#[test]
fn error_messages() {
    let e = err("a AND ");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    assert_eq!(e.column, 7);
    assert_eq!(e.position, 6);
    assert_eq!(
        e.to_string(),
        "query syntax error at column 7: expected a term, a phrase or '(' after 'AND', found end of input"
    );
    assert_eq!(e.excerpt_with_caret(), "a AND \n      ^");
    let e = err("");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 1));
    assert!(e.to_string().contains("empty query"), "{e}");
    let e = err("   ");
    assert_eq!(e.found, "only whitespace");
    let e = err("(a");
    assert_eq!(e.to_string(), "query syntax error at column 3: expected ')' to close the '(' at column 1, found end of input");
    let e = err("a)");
    assert_eq!(
        (e.column, e.found.as_str()),
        (2, "')' without a matching '('")
    );
    let e = err("\"abc");
    assert_eq!((e.column, e.found.as_str()), (1, "end of input"));
    assert!(e.expected.contains("closing '\"'"));
    assert_eq!(
        err("a^").to_string(),
        "query syntax error at column 3: expected a number right after '^', found end of input"
    );
    assert_eq!(err("a^x").column, 3);
    assert_eq!(err("a^ 2").column, 3);
    assert_eq!(err("^2").column, 1);
    assert_eq!(err("+-a").column, 2);
    assert_eq!(
        err("a OR OR b").to_string(),
        "query syntax error at column 6: expected a term, a phrase or '(' after 'OR', found 'OR'"
    );
    assert_eq!(err("title:").to_string(), "query syntax error at column 7: expected a term, a phrase or '(' after 'title:', found end of input");
    assert_eq!(err("a:b:c").column, 4);
    assert_eq!(err("]").column, 1);
    assert_eq!(err("a }").column, 3);
    assert_eq!(err("a\\").column, 2);
    assert_eq!(err("()").column, 2);
    assert_eq!(err("a -").column, 4);
    assert_eq!(err("(a)~2").column, 4);
    assert_eq!(err("ab:\"x").column, 4);
    // Columns count characters, positions bytes.
    let e = err("ééé AND");
    assert_eq!((e.column, e.position), (8, 10));
}

#[test]
fn unsupported_syntax() {
    for (q, col) in [("x *oil", 3), ("*", 1), ("body:*", 6), ("?il", 1)] {
        let e = err(q);
        assert_eq!(
            (e.kind, e.column),
            (ParseErrorKind::Unsupported, col),
            "{q}: {e}"
        );
        assert!(e.to_string().contains("not supported yet"), "{e}");
    }
    assert_eq!(
        err("?il").to_string(),
        format!("unsupported query syntax at column 1: the wildcard term '?il' ('*' or '?' is not allowed first) is not supported yet (supported here: {SUPPORTED})")
    );
}

#[test]
fn multi_term_queries_render_like_lucene() {
    // Renderings of Lucene 10's classic QueryParser with the StandardAnalyzer.
    for (q, want) in [
        ("te?t", "body:te?t"),
        ("t*st", "body:t*st"),
        ("TE?t", "body:te?t"),
        ("oil**", "body:oil**"),
        ("o\\*L?", "body:o\\*l?"),
        ("/joh?n(ath[oa]n)/", "body:/joh?n(ath[oa]n)/"),
        ("/Joh?N/", "body:/joh?n/"),
        ("title:/a.c/", "title:/a.c/"),
        ("roam~1", "body:roam~1"),
        ("roam~", "body:roam~2"),
        ("Roam~0", "body:roam~0"),
        ("roam~5", "body:roam~2"),
        ("roam~0.5", "body:roam~2"),
        ("roam~0.8", "body:roam~0"),
        ("roam~0.7", "body:roam~1"),
        ("oil^2~1", "(body:oil~1)^2.0"),
        ("oil~1^2", "(body:oil~1)^2.0"),
        ("foo*~2", "body:foo*"),
        ("+te?t -roam~1", "+body:te?t -body:roam~1"),
    ] {
        assert_eq!(p(q), want, "{q}");
    }
    let mf = multi();
    assert_eq!(
        mf.parse("te?t").unwrap().to_string(),
        "title:te?t body:te?t"
    );
    assert_eq!(
        mf.parse("roam~1").unwrap().to_string(),
        "title:roam~1 body:roam~1"
    );
    let e = err("a /o.l");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 3));
    assert_eq!(p("/a\\/b/"), "body:/a\\/b/");
    assert_eq!(p("/a/b"), "body:/a/ body:b");
    let e = err("roam~1.5");
    assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 5));
}

#[test]
fn invalid_values_and_limits() {
    let e = err("a^99999999999999999999999999999999999999999");
    assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 3));
    let e = err("\"a b\"~-2");
    assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 6));
    assert_eq!(err("\\u00").kind, ParseErrorKind::InvalidValue);
    let e = err("ab\\u00zz");
    assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 7));
    assert_eq!(err("\\**").kind, ParseErrorKind::InvalidValue);

    let deep_ok = format!("{}a{}", "(".repeat(256), ")".repeat(256));
    assert_eq!(p(&deep_ok), "body:a");
    let too_deep = format!("{}a{}", "(".repeat(257), ")".repeat(257));
    let e = err(&too_deep);
    assert_eq!((e.kind, e.column), (ParseErrorKind::TooDeep, 257));
    let e = err(&"(".repeat(100_000));
    assert_eq!(e.kind, ParseErrorKind::TooDeep);
    let shallow = parser().with_max_depth(2);
    assert!(shallow.parse("((a))").is_ok());
    assert_eq!(err_with(&shallow, "(((a)))").kind, ParseErrorKind::TooDeep);

    let many = "a ".repeat(1025);
    assert_eq!(err(&many).kind, ParseErrorKind::TooManyClauses);
    assert!(parser().parse(&"a ".repeat(1024)).is_ok());
    let split = parser().with_split_on_whitespace(true);
    assert_eq!(err_with(&split, &many).kind, ParseErrorKind::TooManyClauses);
    let many_ops = "+a ".repeat(1025);
    assert_eq!(err(&many_ops).kind, ParseErrorKind::TooManyClauses);
    let small = parser().with_max_clause_count(2);
    assert_eq!(
        err_with(&small, "a-b-c").kind,
        ParseErrorKind::TooManyClauses
    );

    let strict = parser().with_unknown_fields_rejected(true);
    let e = err_with(&strict, "a nope:x");
    assert_eq!((e.kind, e.column), (ParseErrorKind::UnknownField, 3));
    assert!(strict.parse("title:x *:*").is_ok());
    assert_eq!(p("nope:x"), "nope:x");

    let none = QueryParser::with_default_fields(vec![], Arc::new(StopAnalysis));
    assert_eq!(err_with(&none, "a").kind, ParseErrorKind::NoDefaultField);
    assert_eq!(
        err_with(&none, "\"a b\"").kind,
        ParseErrorKind::NoDefaultField
    );
    assert_eq!(err_with(&none, "a*").kind, ParseErrorKind::NoDefaultField);
    assert_eq!(none.parse("f:a").unwrap().to_string(), "f:a");
}

#[test]
fn lexer_tokens() {
    let kinds = |s: &str| lex(s).0.iter().map(|t| t.kind).collect::<Vec<_>>();
    use Kind::*;
    assert_eq!(kinds("a AND b"), vec![Term, And, Term, Eof]);
    assert_eq!(kinds("ANDY ORx NOTE"), vec![Term, Term, Term, Eof]);
    assert_eq!(
        kinds("&& || ! &&& |"),
        vec![And, Or, BareOper, Term, Term, Eof]
    );
    assert_eq!(
        kinds("+a -b !c"),
        vec![Plus, Term, Minus, Term, Not, Term, Eof]
    );
    assert_eq!(
        kinds("a* *a a*b ? * a?"),
        vec![PrefixTerm, WildTerm, WildTerm, WildTerm, Star, WildTerm, Eof]
    );
    assert_eq!(
        kinds("a~ a~2.5 \"x\"~3"),
        vec![Term, FuzzySlop, Term, FuzzySlop, Quoted, FuzzySlop, Eof]
    );
    assert_eq!(kinds("a^2.5b"), vec![Term, Carat, Number, Term, Eof]);
    assert_eq!(kinds("a\u{3000}b"), vec![Term, Term, Eof]);
    assert_eq!(kinds("a\u{a0}b"), vec![Term, Eof]);
    assert_eq!(kinds("a-b+c"), vec![Term, Eof]);
}

#[test]
fn simple_analysis() {
    let t = |s: &str| SimpleAnalysis.tokens("f", s);
    assert_eq!(t("Wi-Fi rocks"), vec!["wi", "fi", "rocks"]);
    assert_eq!(
        t("U.S. o'Neil 3.5 1,000 a,b"),
        vec!["u.s", "o'neil", "3.5", "1,000", "a", "b"]
    );
    assert_eq!(t("東京 ok"), vec!["東", "京", "ok"]);
    assert_eq!(t("..."), Vec::<String>::new());
    assert_eq!(t(&"x".repeat(300)).len(), 2);
}

#[test]
fn java_float_parsing() {
    assert_eq!(java_parse_float("2"), Some(2.0));
    assert_eq!(java_parse_float("2.5f"), Some(2.5));
    assert_eq!(java_parse_float(".5"), Some(0.5));
    assert_eq!(java_parse_float("5."), Some(5.0));
    assert_eq!(java_parse_float("-1e2"), Some(-100.0));
    assert_eq!(java_parse_float("Infinity"), Some(f32::INFINITY));
    assert!(java_parse_float("NaN").is_some_and(f32::is_nan));
    assert_eq!(java_parse_float(""), None);
    assert_eq!(java_parse_float("inf"), None);
    assert_eq!(java_parse_float("1e"), None);
    assert_eq!(java_parse_float("x"), None);
    assert_eq!(java_parse_float("."), None);
}

const ALPHABET: &[&str] = &[
    "a",
    "b",
    "oil",
    "Wi-Fi",
    "the",
    "title",
    " ",
    " ",
    "\t",
    "\u{3000}",
    "AND",
    "OR",
    "NOT",
    "&&",
    "||",
    "!",
    "+",
    "-",
    "(",
    ")",
    ":",
    "^",
    "2",
    "1.5",
    ".",
    "\"",
    "~",
    "*",
    "?",
    "\\",
    "/",
    "[",
    "]",
    "{",
    "}",
    "TO",
    ">",
    "<",
    "=",
    ">=",
    "year:",
    "é",
    "東",
    "\\u",
    "0041",
    "\u{1F600}",
    "&",
    "|",
    "9999999999999999999999999999999999999999",
];

fn configs() -> Vec<QueryParser> {
    vec![
        parser(),
        parser()
            .with_default_operator(Operator::And)
            .with_split_on_whitespace(true),
        multi().with_field_boost("title", 3.0),
        QueryParser::with_default_fields(vec![], Arc::new(SimpleAnalysis)).with_max_depth(4),
        parser()
            .with_max_clause_count(3)
            .with_unknown_fields_rejected(true),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(pieces in prop::collection::vec(prop::sample::select(ALPHABET), 0..40)) {
        let input: String = pieces.concat();
        for qp in configs() {
            match qp.parse(&input) {
                Ok(q) => {
                    let _ = q.to_string();
                    let _ = q.to_string_with_field("body");
                }
                Err(e) => {
                    prop_assert!(e.position <= input.len());
                    prop_assert!(input.is_char_boundary(e.position));
                    prop_assert_eq!(e.column, input[..e.position].chars().count() + 1);
                    let _ = e.to_string();
                    let _ = e.excerpt_with_caret();
                }
            }
        }
    }

    #[test]
    fn never_panics_on_any_string(input in any::<String>()) {
        for qp in configs() {
            if let Ok(q) = qp.parse(&input) {
                let _ = q.to_string();
            }
        }
    }

    #[test]
    fn renders_round_trip(q in round_trippable_query()) {
        let rendered = q.to_string();
        let parsed = parser().parse(&rendered);
        prop_assert_eq!(parsed.as_ref().ok(), Some(&q), "rendered {:?} -> {:?}", rendered, parsed);
    }
}

fn word() -> impl Strategy<Value = String> {
    // Not the test analysis' stop word: the parser drops it, so no parsed query holds it.
    "[a-z][a-z0-9]{0,5}".prop_filter("stop word", |w| w != "the")
}

/// A range bound that reads back as itself: lowercase (the test analysis normalizes), no
/// space, `]`, `}`, `\` or `"`; a literal `*` (rendered `\*`) included.
fn range_bound() -> impl Strategy<Value = String> {
    prop_oneof![
        word(),
        "[a-z0-9+-][a-z0-9:.+*(-]{0,10}",
        Just("*".to_string()),
    ]
}

fn field() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["body", "title"]).prop_map(String::from)
}

/// Queries the parser produces from their own rendering: booleans have two or more
/// clauses or one non-SHOULD clause, no FILTER/MatchNone/minimum-should-match, phrases
/// have consecutive positions, and boosts render in plain notation.
fn round_trippable_query() -> impl Strategy<Value = Query> {
    let leaf = prop_oneof![
        (field(), word()).prop_map(|(f, t)| Query::term(f, t)),
        (field(), prop::collection::vec(word(), 2..4), 0u32..4).prop_map(|(f, ws, slop)| {
            Query::Phrase {
                field: f,
                terms: ws
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| (i as u32, w))
                    .collect(),
                slop,
            }
        }),
        (field(), word()).prop_map(|(f, w)| Query::Prefix {
            field: f,
            prefix: w
        }),
        (
            field(),
            prop::option::of(range_bound()),
            prop::option::of(range_bound()),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(f, lower, upper, il, iu)| Query::Range {
                field: f,
                lower,
                upper,
                include_lower: il,
                include_upper: iu,
                format: None,
                time_zone: None,
            }),
        Just(Query::MatchAll),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        let occur = prop::sample::select(vec![Occur::Must, Occur::Should, Occur::MustNot]);
        prop_oneof![
            prop::collection::vec((occur, inner.clone()), 1..4)
                .prop_filter("single SHOULD clause collapses", |cs| cs.len() > 1
                    || cs[0].0 != Occur::Should)
                .prop_map(|cs| Query::boolean(
                    cs.into_iter().map(|(o, q)| Clause::new(o, q)).collect()
                )),
            (inner, 1u32..100_000).prop_map(|(q, b)| Query::boosted(q, b as f32 / 1000.0)),
        ]
    })
}

#[test]
fn boost_rendering_reparses() {
    for b in [0.001f32, 0.5, 1.0, 2.0, 12.75, 99.999] {
        let q = Query::boosted(Query::term("body", "x"), b);
        assert_eq!(
            parser().parse(&q.to_string()).unwrap(),
            q,
            "{}",
            java_float_to_string(b)
        );
    }
}

/// SimpleAnalysis, except that `year`, `date` and `tag` are not text fields: their terms and
/// range bounds are kept as written (what the schema-backed analysis does for keyword,
/// numeric and date fields).
#[derive(Debug)]
struct TypedAnalysis;

impl TypedAnalysis {
    fn is_text(field: &str) -> bool {
        !matches!(field, "year" | "date" | "tag")
    }
}

impl FieldAnalysis for TypedAnalysis {
    fn tokens(&self, field: &str, text: &str) -> Vec<String> {
        if Self::is_text(field) {
            SimpleAnalysis.tokens(field, text)
        } else {
            vec![text.to_string()]
        }
    }
    fn normalize(&self, field: &str, text: &str) -> String {
        if Self::is_text(field) {
            SimpleAnalysis.normalize(field, text)
        } else {
            text.to_string()
        }
    }
}

fn typed() -> QueryParser {
    QueryParser::new("body", Arc::new(TypedAnalysis))
}

fn t(input: &str) -> Query {
    typed()
        .parse(input)
        .unwrap_or_else(|e| panic!("{input:?} failed: {e}"))
}

#[test]
fn ranges_equal_lucene_10_6() {
    // Each rendering was produced by Lucene 10.6.0's classic QueryParser (default field body,
    // operator OR, StandardAnalyzer; `toString()`); `Err(column)` is where Lucene reported its
    // ParseException (its 0-based column plus one, i.e. quarry's 1-based column).
    let single: &[(&str, Result<&str, usize>)] = &[
        ("year:[1990 TO 2000]", Ok("year:[1990 TO 2000]")),
        ("year:{1990 TO 2000}", Ok("year:{1990 TO 2000}")),
        ("year:[1990 TO 2000}", Ok("year:[1990 TO 2000}")),
        ("year:{1990 TO 2000]", Ok("year:{1990 TO 2000]")),
        ("price:{* TO 10]", Ok("price:{* TO 10]")),
        ("price:[10 TO *]", Ok("price:[10 TO *]")),
        ("price:[* TO *]", Ok("price:[* TO *]")),
        ("price:{* TO *}", Ok("price:{* TO *}")),
        ("[a TO b]", Ok("body:[a TO b]")),
        ("[A TO B]", Ok("body:[a TO b]")),
        ("title:[Apple TO Banana]", Ok("title:[apple TO banana]")),
        (
            "date:[2020-01-01T00:00:00Z TO 2021-01-01T00:00:00.000+01:00]",
            Ok("date:[2020-01-01t00:00:00z TO 2021-01-01t00:00:00.000+01:00]"),
        ),
        ("date:[2020-01-01 TO *]", Ok("date:[2020-01-01 TO *]")),
        // No date resolution is set, so Lucene's DateFormat detection leaves dates alone.
        (
            "date:[6/1/2005 TO 6/4/2005]",
            Ok("date:[6/1/2005 TO 6/4/2005]"),
        ),
        ("[\"a b\" TO \"c d\"]", Ok("body:[a b TO c d]")),
        ("[\"A B\" TO c]", Ok("body:[a b TO c]")),
        ("[\\* TO b]", Ok("body:[\\* TO b]")),
        ("[\"*\" TO b]", Ok("body:[\\* TO b]")),
        ("[a* TO b?]", Ok("body:[a* TO b?]")),
        ("[a\\ b TO c]", Err(5)),
        ("[a\\\\b TO c]", Ok("body:[a\\b TO c]")),
        ("[a\\]b TO c]", Err(4)),
        ("[\"a\\\"b\" TO c]", Ok("body:[a\"b TO c]")),
        ("[\"ab\"x TO c]", Ok("body:[\"ab\"x TO c]")),
        ("[\"\" TO c]", Ok("body:[\"\" TO c]")),
        ("[TO TO TO]", Ok("body:[to TO to]")),
        ("[TOx TO TO]", Ok("body:[tox TO to]")),
        ("[a TO b]^2", Ok("(body:[a TO b])^2.0")),
        ("year:[1 TO 2]^2", Ok("(year:[1 TO 2])^2.0")),
        ("year:[1 TO 2]^0.5 oil", Ok("(year:[1 TO 2])^0.5 body:oil")),
        ("oil year:[1 TO 2]", Ok("body:oil year:[1 TO 2]")),
        ("+oil -year:[1 TO 2]", Ok("+body:oil -year:[1 TO 2]")),
        ("oil AND [a TO b]", Ok("+body:oil +body:[a TO b]")),
        ("(oil [a TO b])", Ok("body:oil body:[a TO b]")),
        ("title:(oil [a TO b])", Ok("title:oil title:[a TO b]")),
        ("[  a   TO   b  ]", Ok("body:[a TO b]")),
        ("[a TO b]oil", Ok("body:[a TO b] body:oil")),
        ("[a TO b]~2", Err(9)),
        ("[a TO b]^2~1", Err(11)),
        ("[a TO]", Err(6)),
        ("[ TO b]", Err(6)),
        ("[a b]", Err(4)),
        ("[a TO b", Err(8)),
        ("[a TO b c]", Err(9)),
        ("[]", Err(2)),
        ("[", Err(2)),
        ("{a TO b", Err(8)),
        ("[a TO b]]", Err(9)), // Lucene: a lexical error, reported past the input's end
        ("x:[a:b TO c(d)]", Ok("x:[a:b TO c(d)]")),
        ("[\\u0041 TO \\u0042]", Ok("body:[a TO b]")),
        ("[a\tTO b]", Err(7)),
        ("[\ta TO b]", Ok("body:[\ta TO b]")),
        ("[a TO b\t]", Ok("body:[a TO b\t]")),
        ("[\"a b\"x TO c]", Err(7)),
        ("[a\" TO b\"]", Ok("body:[a\" TO b\"]")),
        ("[a TO \"b]", Ok("body:[a TO \"b]")),
        ("[é TO 東]", Ok("body:[é TO 東]")),
        ("[-1 TO +1]", Ok("body:[-1 TO +1]")),
        ("[-1.5e3 TO 1.5E3]", Ok("body:[-1.5e3 TO 1.5e3]")),
        ("[1,000 TO 2.000]", Ok("body:[1,000 TO 2.000]")),
        ("*:[a TO b]", Ok("*:[a TO b]")),
        ("a b [c TO d] e", Ok("(body:a body:b) body:[c TO d] body:e")),
        ("[a TO b] c d", Ok("body:[a TO b] (body:c body:d)")),
    ];
    let multi: &[(&str, &str)] = &[
        ("[a TO b]", "title:[a TO b] body:[a TO b]"),
        ("{A TO *]", "title:{a TO *] body:{a TO *]"),
        ("title:[a TO b]", "title:[a TO b]"),
        ("body:[a TO b]^3", "(body:[a TO b])^3.0"),
        (
            "oil [a TO b]",
            "(title:oil body:oil) (title:[a TO b] body:[a TO b])",
        ),
        ("x:[a TO b]", "x:[a TO b]"),
    ];
    let boosted: &[(&str, &str)] = &[
        ("[a TO b]", "(title:[a TO b])^2.0 body:[a TO b]"),
        ("{A TO *]", "(title:{a TO *])^2.0 body:{a TO *]"),
        ("title:[a TO b]", "(title:[a TO b])^2.0"),
        ("body:[a TO b]^3", "(body:[a TO b])^3.0"),
        (
            "oil [a TO b]",
            "((title:oil)^2.0 body:oil) ((title:[a TO b])^2.0 body:[a TO b])",
        ),
        ("x:[a TO b]", "x:[a TO b]"),
    ];
    let standard: Arc<dyn FieldAnalysis> = Arc::new(StandardAnalysis::new());
    let qp = QueryParser::new("body", standard.clone());
    for (input, want) in single {
        match (qp.parse(input), want) {
            (Ok(q), Ok(w)) => assert_eq!(q.to_string(), *w, "{input:?}"),
            (Err(e), Err(col)) => assert_eq!(e.column, *col, "{input:?}: {e}"),
            (got, _) => panic!("{input:?}: got {got:?}, Lucene {want:?}"),
        }
    }
    let fields = vec!["title".to_string(), "body".to_string()];
    let mqp = QueryParser::with_default_fields(fields, standard);
    for (input, want) in multi {
        assert_eq!(mqp.parse(input).unwrap().to_string(), *want, "{input:?}");
    }
    let bqp = mqp.with_field_boost("title", 2.0);
    for (input, want) in boosted {
        assert_eq!(bqp.parse(input).unwrap().to_string(), *want, "{input:?}");
    }
}

#[test]
fn range_forms() {
    assert_eq!(
        t("year:[1990 TO 2000]"),
        Query::range("year", Some("1990"), Some("2000"), true, true)
    );
    assert_eq!(
        t("year:{1990 TO 2000}"),
        Query::range("year", Some("1990"), Some("2000"), false, false)
    );
    assert_eq!(
        t("year:[1990 TO 2000}"),
        Query::range("year", Some("1990"), Some("2000"), true, false)
    );
    assert_eq!(
        t("year:{1990 TO 2000]"),
        Query::range("year", Some("1990"), Some("2000"), false, true)
    );
    assert_eq!(
        t("price:{* TO 10]"),
        Query::range("price", None, Some("10"), false, true)
    );
    assert_eq!(
        t("year:[2000 TO *]"),
        Query::range("year", Some("2000"), None, true, true)
    );
    assert_eq!(
        t("year:[* TO *]"),
        Query::range("year", None, None, true, true)
    );
    // Non-text fields keep their bounds as written (a date survives intact); text fields
    // normalize them.
    assert_eq!(
        t("date:[2020-01-01T00:00:00Z TO 2021-06-30T23:59:59.999+02:00]"),
        Query::range(
            "date",
            Some("2020-01-01T00:00:00Z"),
            Some("2021-06-30T23:59:59.999+02:00"),
            true,
            true
        )
    );
    assert_eq!(
        t("tag:[ABC TO Xyz}"),
        Query::range("tag", Some("ABC"), Some("Xyz"), true, false)
    );
    assert_eq!(
        t("title:[ABC TO Xyz}"),
        Query::range("title", Some("abc"), Some("xyz"), true, false)
    );
    assert_eq!(
        t("year:[-5 TO +1.5e3]"),
        Query::range("year", Some("-5"), Some("+1.5e3"), true, true)
    );
    // Quoted bounds: quotes removed, escapes resolved, `"*"` is a literal star.
    assert_eq!(
        t("tag:[\"New York\" TO \"Paris\"]"),
        Query::range("tag", Some("New York"), Some("Paris"), true, true)
    );
    assert_eq!(
        t("tag:[\"*\" TO \\*]"),
        Query::range("tag", Some("*"), Some("*"), true, true)
    );
    assert_eq!(
        t("tag:[a\\:b TO \"c\\\"d\"]"),
        Query::range("tag", Some("a:b"), Some("c\"d"), true, true)
    );
    // No field: the default field, like any term.
    assert_eq!(
        t("[a TO b]"),
        Query::range("body", Some("a"), Some("b"), true, true)
    );
    assert_eq!(
        t("year:(x [1 TO 2])"),
        Query::boolean(vec![
            Clause::new(Occur::Should, Query::term("year", "x")),
            Clause::new(
                Occur::Should,
                Query::range("year", Some("1"), Some("2"), true, true)
            ),
        ])
    );
    // Boosts.
    assert_eq!(
        t("year:[1 TO 2]^2"),
        Query::boosted(Query::range("year", Some("1"), Some("2"), true, true), 2.0)
    );
    assert_eq!(t("year:[1 TO 2]^2").to_string(), "(year:[1 TO 2])^2.0");
    assert_eq!(
        t("+oil -year:{1 TO 2}").to_string(),
        "+body:oil -year:{1 TO 2}"
    );
    // A field boost applies to ranges (MultiFieldQueryParser.getRangeQuery).
    let m = QueryParser::with_default_fields(
        vec!["title".into(), "tag".into()],
        Arc::new(TypedAnalysis),
    )
    .with_field_boost("tag", 3.0);
    assert_eq!(
        m.parse("[A TO B]").unwrap().to_string(),
        "title:[a TO b] (tag:[A TO B])^3.0"
    );
    assert_eq!(
        m.parse("tag:[A TO B]").unwrap().to_string(),
        "(tag:[A TO B])^3.0"
    );
    let none = QueryParser::with_default_fields(vec![], Arc::new(TypedAnalysis));
    assert_eq!(
        err_with(&none, "[a TO b]").kind,
        ParseErrorKind::NoDefaultField
    );
    assert_eq!(
        none.parse("year:[1 TO 2]").unwrap().to_string(),
        "year:[1 TO 2]"
    );
    let strict = typed().with_unknown_fields_rejected(true);
    assert!(strict.parse("year:[1 TO 2]").is_ok());
}

#[test]
fn one_sided_ranges_like_elasticsearch() {
    // Elasticsearch query_string: `field:>x`, `>=x`, `<x`, `<=x` with an explicit field.
    assert_eq!(
        t("year:>1990"),
        Query::range("year", Some("1990"), None, false, true)
    );
    assert_eq!(
        t("year:>=1990"),
        Query::range("year", Some("1990"), None, true, true)
    );
    assert_eq!(
        t("year:<2000"),
        Query::range("year", None, Some("2000"), true, false)
    );
    assert_eq!(
        t("year:<=2000"),
        Query::range("year", None, Some("2000"), true, true)
    );
    assert_eq!(t("year:>1990").to_string(), "year:{1990 TO *]");
    assert_eq!(t("year:<=2000").to_string(), "year:[* TO 2000]");
    assert_eq!(
        t("date:>=2020-01-01"),
        Query::range("date", Some("2020-01-01"), None, true, true)
    );
    assert_eq!(
        t("date:<2020-01-01T00\\:00\\:00Z"),
        Query::range("date", None, Some("2020-01-01T00:00:00Z"), true, false)
    );
    assert_eq!(
        t("year:>-5"),
        Query::range("year", Some("-5"), None, false, true)
    );
    assert_eq!(t("title:>=Oil").to_string(), "title:[oil TO *]");
    assert_eq!(
        t("year:(>=1990 AND <2000)").to_string(),
        "+year:[1990 TO *] +year:[* TO 2000}"
    );
    assert_eq!(
        t("+year:>=1990 -year:>1995 oil").to_string(),
        "+year:[1990 TO *] -year:{1995 TO *] body:oil"
    );
    assert_eq!(t("year:>=1990^2").to_string(), "(year:[1990 TO *])^2.0");
    // As in Elasticsearch: `>=` alone is `>` with the bound `=`; `>` alone is a plain term;
    // a `*` bound is open; an unquoted run under one field is one text.
    assert_eq!(t("year:>=").to_string(), "year:{= TO *]");
    assert_eq!(t("year:>"), Query::term("year", ">"));
    assert_eq!(t("year:>\\*").to_string(), "year:{* TO *]");
    assert_eq!(t("year:(>1 <5)").to_string(), "year:{1 <5 TO *]");
    let split = typed().with_split_on_whitespace(true);
    assert_eq!(
        split.parse("year:(>1 <5)").unwrap().to_string(),
        "year:{1 TO *] year:[* TO 5}"
    );
    // Without an explicit field, or quoted, it is text (Lucene's reading).
    assert_eq!(t(">1990"), Query::term("body", "1990"));
    assert_eq!(t("year:\">1990\""), Query::term("year", ">1990"));
    assert_eq!(multi().parse(">5").unwrap().to_string(), "title:5 body:5");
    assert_eq!(
        multi().parse("title:>5").unwrap().to_string(),
        "title:{5 TO *]"
    );
}

#[test]
fn range_errors() {
    let e = err("year:[1990 2000]");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 12));
    assert_eq!(
        e.to_string(),
        "query syntax error at column 12: expected 'TO' after the lower bound '1990', found '2000'"
    );
    let e = err("year:[1990 TO 2000");
    assert_eq!(
        e.to_string(),
        "query syntax error at column 19: expected ']' or '}' to close the range opened at column 6, found end of input"
    );
    let e = err("year:[1990 TO 2000 3000]");
    assert_eq!((e.column, e.found.as_str()), (20, "'3000'"));
    let e = err("year:[ TO 2000]");
    assert_eq!(
        e.to_string(),
        "query syntax error at column 11: expected 'TO' after the lower bound 'TO', found '2000'"
    );
    let e = err("year:[1990 TO ]");
    assert_eq!(
        e.to_string(),
        "query syntax error at column 15: expected the upper bound of the range after 'TO' (a value, a \"quoted value\" or '*'), found ']'"
    );
    let e = err("year:{}");
    assert_eq!(
        e.to_string(),
        "query syntax error at column 7: expected the lower bound of the range after '{' (a value, a \"quoted value\" or '*'), found '}'"
    );
    assert_eq!(err("year:[").column, 7);
    assert_eq!(err("[a TO b]~2").column, 9);
    assert_eq!(err("[a TO b]^").column, 10);
    assert_eq!(err("[a TO b]^x").column, 10);
    assert_eq!(err("[a TO b]]").column, 9);
    // Escapes are checked once the range has parsed, as in Lucene.
    let e = err("[a TO b\\]");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 8));
    let e = err("[a\\ TO b]");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 3));
    let e = err("[\\u00zz TO b]");
    assert_eq!((e.kind, e.column), (ParseErrorKind::InvalidValue, 6));
    let e = err("[\"a\\\" TO b]");
    assert_eq!((e.kind, e.column), (ParseErrorKind::Syntax, 4));
    let strict = parser().with_unknown_fields_rejected(true);
    assert_eq!(
        err_with(&strict, "nope:[1 TO 2]").kind,
        ParseErrorKind::UnknownField
    );
    assert_eq!(
        err_with(&strict, "nope:>1").kind,
        ParseErrorKind::UnknownField
    );
}

#[test]
fn range_lexer_tokens() {
    let kinds = |s: &str| lex(s).0.iter().map(|t| t.kind).collect::<Vec<_>>();
    use Kind::*;
    assert_eq!(
        kinds("x:[a TO b]^2 c"),
        vec![
            Term, Colon, RangeStart, RangeGoop, RangeTo, RangeGoop, RangeEnd, Carat, Number, Term,
            Eof
        ]
    );
    assert_eq!(
        kinds("{\"a b\" TO *}"),
        vec![RangeStart, RangeQuoted, RangeTo, RangeGoop, RangeEnd, Eof]
    );
    // Inside a range, `:`, `(`, `"` and `-` are ordinary bound characters; only ' ', `]`
    // and `}` end a bound; `TO` is a keyword only on its own.
    assert_eq!(
        kinds("[a:b(c\"d TOx TO]"),
        vec![RangeStart, RangeGoop, RangeGoop, RangeTo, RangeEnd, Eof]
    );
    assert_eq!(
        kinds("[a TO b"),
        vec![RangeStart, RangeGoop, RangeTo, RangeGoop, Eof]
    );
    assert_eq!(kinds("[\t]"), vec![RangeStart, RangeEnd, Eof]);
    assert_eq!(kinds("[\ta]"), vec![RangeStart, RangeGoop, RangeEnd, Eof]);
    let images = |s: &str| {
        lex(s)
            .0
            .iter()
            .map(|t| s[t.start..t.end].to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        images("[\"a\\\"b\" TO \"ab\"x]"),
        vec!["[", "\"a\\\"b\"", "TO", "\"ab\"x", "]", ""]
    );
    assert_eq!(images("[\"a\\\" x"), vec!["[", "\"a\\\"", "x", ""]);
}
