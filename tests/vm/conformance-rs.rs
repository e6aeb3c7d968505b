// SPDX-License-Identifier: MIT
// Rust workload of the conformance suite (tests/suites/80-conformance.sh):
// recursion, a generic method, a trait object, closures and a thread, so
// that profiles hold Rust names of both manglings (legacy for this crate
// unless built with -C symbol-mangling-version=v0, v0 for a recent std).
use std::collections::HashMap;
#[inline(never)]
fn fib(n: u64) -> u64 { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }
struct Acc<T> { v: Vec<T> }
impl<T: Clone + std::fmt::Debug> Acc<T> {
    #[inline(never)]
    fn push_many(&mut self, x: T, n: usize) { for _ in 0..n { self.v.push(x.clone()); } }
}
trait Work { fn work(&self, n: u64) -> u64; }
struct A;
impl Work for A { #[inline(never)] fn work(&self, n: u64) -> u64 { let mut m = HashMap::new(); for i in 0..n { *m.entry(i % 97).or_insert(0u64) += fib(i % 20); } m.values().sum() } }
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(30);
    let mut acc = Acc { v: Vec::new() };
    let mut t = 0;
    for i in 0..n { t += fib(24); acc.push_many(format!("s{}", i), 2000); let w: Box<dyn Work> = Box::new(A); t += w.work(20000); }
    let h = std::thread::spawn(move || fib(27));
    println!("{} {} {}", t, acc.v.len(), h.join().unwrap());
}
