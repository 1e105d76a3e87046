//! Search caches that every thread draws from one stack: for regexes that many threads search
//! now and then (a candidate line's confirmation, a file's detection). `regex`'s own pool keeps
//! one cache per thread that ever used the regex (a lazy DFA that grows with the text searched,
//! sparse sets the size of the automaton); here a thread takes a cache, or makes one when all
//! are in use, and puts it back after its search, so a run keeps about as many caches as
//! searches of that regex ever overlapped, whatever its thread count. Holds no text and decides
//! nothing: the caller's regex, the caller's search.

use std::sync::Mutex;

/// Boxed: a cache is large (a lazy DFA's is hundreds of bytes), and moving it in and out of the
/// stack by value for each search cost more than the search on a short line.
pub struct Caches<C>(Mutex<Vec<Box<C>>>);

impl<C> Default for Caches<C> {
    fn default() -> Self {
        Caches(Mutex::new(Vec::new()))
    }
}

impl<C> Caches<C> {
    /// Run `search` with a spare cache (or a new one from `make`), then put the cache back.
    /// The lock is held only to take and to return it, never during the search.
    pub fn with<T>(&self, make: impl FnOnce() -> C, search: impl FnOnce(&mut C) -> T) -> T {
        let spare = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        let taken = spare().pop();
        let mut cache = taken.unwrap_or_else(|| Box::new(make()));
        let out = search(&mut cache);
        spare().push(cache);
        out
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta::Regex;

    #[test]
    fn searches_from_many_threads_agree_with_the_regex() {
        let re = Regex::new(r"\bout of memory\b").unwrap();
        let caches = Caches::default();
        let lines: Vec<String> = (0..400)
            .map(|i| match i % 3 {
                0 => format!("rank {i}: CUDA out of memory"),
                1 => format!("rank {i}: outof memory"),
                _ => format!("rank {i}: ok"),
            })
            .collect();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for l in &lines {
                        let got = caches.with(
                            || re.create_cache(),
                            |c| re.is_match_with(c, &l.as_str().into()),
                        );
                        assert_eq!(got, re.is_match(l.as_str()), "{l}");
                    }
                });
            }
        });
        // Never more caches than searches at once.
        assert!((1..=4).contains(&caches.len()));
    }
}
