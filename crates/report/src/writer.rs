//! The one interface every renderer of a whole results document meets: the terminal summary,
//! Markdown, CSV and the HTML report each take a document and return its text. The shared
//! formatting they use (numbers with units, values, spreads, cycles, sections) is in `units` and
//! `table`; escaping for each medium in `hygiene`.

use memscope_results::Results;
use serde_json::Value;

/// A renderer of a results document.
pub trait Writer {
    /// The format's name as the command line spells it ("terminal", "md", "csv", "html").
    fn format(&self) -> &'static str;
    /// The rendered document.
    fn render(&self, results: &Results) -> String;
}

/// The datasheet summary for a terminal (`table::summary`).
pub struct Terminal;

/// The Markdown datasheet (`markdown::to_string`).
pub struct Markdown;

/// One CSV row per finding (`csv::to_string`).
pub struct Csv;

/// The self-contained HTML report (`html::report`), with a bottleneck-model run's section when
/// one is given.
pub struct Html<'m> {
    pub model: Option<&'m Value>,
}

impl Writer for Terminal {
    fn format(&self) -> &'static str {
        "terminal"
    }
    fn render(&self, results: &Results) -> String {
        crate::table::summary(results)
    }
}

impl Writer for Markdown {
    fn format(&self) -> &'static str {
        "md"
    }
    fn render(&self, results: &Results) -> String {
        crate::markdown::to_string(results)
    }
}

impl Writer for Csv {
    fn format(&self) -> &'static str {
        "csv"
    }
    fn render(&self, results: &Results) -> String {
        crate::csv::to_string(results)
    }
}

impl Writer for Html<'_> {
    fn format(&self) -> &'static str {
        "html"
    }
    fn render(&self, results: &Results) -> String {
        crate::html::report(results, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_writer_renders_the_sample_as_its_function_does() {
        let r = memscope_results::sample::results();
        let writers: [&dyn Writer; 4] = [&Terminal, &Markdown, &Csv, &Html { model: None }];
        let direct = [
            crate::table::summary(&r),
            crate::markdown::to_string(&r),
            crate::csv::to_string(&r),
            crate::html::report(&r, None),
        ];
        for (w, d) in writers.iter().zip(direct) {
            assert_eq!(w.render(&r), d, "{}", w.format());
            assert!(!d.is_empty(), "{}", w.format());
        }
    }
}
