//! One scanner, many watchers: each part of the analysis that wants lines (the rule set, the
//! launcher/NCCL event reader, the error tail) registers its own patterns here under its own
//! owner tag and its own local numbers, and gets back, for every hit, the owner and the local
//! number it registered — never a global id to do arithmetic on. Generic over the owner tag:
//! like the rest of `scan`, it knows nothing of rules, facts or files.

use super::{Lit, PatternError, PatternSpec, Scanner};

/// Patterns and marks being registered for one scanner.
pub struct Registry<'a, O> {
    specs: Vec<PatternSpec<'a>>,
    marks: Vec<(usize, &'a str)>,
    routes: Vec<(O, usize)>,
}

/// A pattern that cannot be scanned: its owner, its local number, and why.
pub type WatchError<O> = (O, usize, PatternError);

/// The scanner's id → (owner, local) table.
pub struct Routes<O> {
    routes: Vec<(O, usize)>,
}

impl<'a, O: Copy> Default for Registry<'a, O> {
    fn default() -> Self {
        Registry {
            specs: Vec::new(),
            marks: Vec::new(),
            routes: Vec::new(),
        }
    }
}

impl<'a, O: Copy> Registry<'a, O> {
    /// A regex (with its required literals when already linted) that `owner` calls `local`.
    pub fn pattern(&mut self, owner: O, local: usize, regex: &'a str, literals: Option<&'a [Lit]>) {
        self.pattern_windowed(owner, local, regex, literals, None);
    }

    /// As `pattern`, with where each literal's prefilter window starts when already picked
    /// (`LazyRegex::windows`).
    pub fn pattern_windowed(
        &mut self,
        owner: O,
        local: usize,
        regex: &'a str,
        literals: Option<&'a [Lit]>,
        windows: Option<&'a [usize]>,
    ) {
        let id = self.routes.len();
        self.routes.push((owner, local));
        self.specs.push(PatternSpec {
            id,
            regex,
            literals,
            windows,
        });
    }

    /// A plain literal reported on every line holding it (`Scanner::with_marks`).
    pub fn mark(&mut self, owner: O, local: usize, literal: &'a str) {
        let id = self.routes.len();
        self.routes.push((owner, local));
        self.marks.push((id, literal));
    }

    /// Compile the scanner. Errors name the owner and local number of each bad pattern.
    pub fn build(self) -> Result<(Scanner, Routes<O>), Vec<WatchError<O>>> {
        match Scanner::with_marks(&self.specs, &self.marks) {
            Ok(s) => Ok((
                s,
                Routes {
                    routes: self.routes,
                },
            )),
            Err(errs) => {
                let routes = &self.routes;
                Err(errs
                    .into_iter()
                    .filter_map(|(id, e)| routes.get(id).map(|&(o, l)| (o, l, e)))
                    .collect())
            }
        }
    }
}

impl<O: Copy> Routes<O> {
    /// Who registered the pattern a hit is for, and under which local number.
    pub fn route(&self, id: usize) -> (O, usize) {
        self.routes[id]
    }

    /// The scanner id of `owner`'s pattern `local` (the tests' way to check a route).
    #[cfg(test)]
    pub fn id_of(&self, owner: O, local: usize) -> Option<usize>
    where
        O: PartialEq,
    {
        self.routes
            .iter()
            .position(|&(o, l)| o == owner && l == local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::ScanScratch;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Who {
        A,
        B,
    }

    #[test]
    fn hits_come_back_to_their_owner_with_its_local_number() {
        let mut r = Registry::default();
        r.pattern(Who::B, 7, r"Bus error", None);
        r.pattern(Who::A, 0, r"CUDA out of memory", None);
        r.mark(Who::A, 1, "Traceback");
        let (scanner, routes) = r.build().unwrap();
        let text = b"x\nRuntimeError: CUDA out of memory\nBus error here\nTraceback (most recent call last):\n";
        let mut got = Vec::new();
        scanner.scan_chunk(text, 1, &mut ScanScratch::default(), |h, _| {
            got.push((routes.route(h.id), h.lineno));
        });
        got.sort_by_key(|g| g.1);
        assert_eq!(
            got,
            vec![((Who::A, 0), 2), ((Who::B, 7), 3), ((Who::A, 1), 4)]
        );
        assert_eq!(routes.id_of(Who::B, 7), Some(0));
    }

    #[test]
    fn errors_name_the_owner() {
        let mut r = Registry::default();
        r.pattern(Who::A, 0, r"Bus error", None);
        r.pattern(Who::B, 3, r".*", None);
        let Err(e) = r.build() else {
            panic!("a pattern without a literal must not build")
        };
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].0, e[0].1), (Who::B, 3));
    }
}
