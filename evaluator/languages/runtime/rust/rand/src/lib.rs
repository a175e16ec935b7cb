//! The part of the rand 0.4 API that HumanEval-X's Rust programs use.
//!
//! HumanEval-X's reference harness builds every Rust sample against `rand = "0.4"`, and
//! its tests call `rng.gen_range(low, high)` (two arguments; rand 0.8 takes a range),
//! `rng.gen::<T>()`, `rand::thread_rng()` and `rand::random::<T>()`. Only rand 0.8 is
//! packaged for offline use, so this crate provides the 0.4 signatures. The generator is
//! xoshiro256** seeded from the standard library's per-process random hash keys, which
//! come from the operating system; it is for generating test inputs, not for secrets.

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::rc::Rc;

/// A source of random numbers, with rand 0.4's provided methods.
pub trait Rng {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64;

    fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// A random value of any type implementing `Rand`.
    fn gen<T: Rand>(&mut self) -> T
    where
        Self: Sized,
    {
        T::rand(self)
    }

    /// A value uniformly distributed in `[low, high)`; panics when `low >= high`, as
    /// rand 0.4 does.
    fn gen_range<T: PartialOrd + SampleRange>(&mut self, low: T, high: T) -> T
    where
        Self: Sized,
    {
        assert!(low < high, "Rng.gen_range called with low >= high");
        T::sample_range(self, low, high)
    }

    /// True with probability 1/n.
    fn gen_weighted_bool(&mut self, n: u32) -> bool
    where
        Self: Sized,
    {
        n <= 1 || self.gen_range(0, n) == 0
    }

    fn gen_iter<T: Rand>(&mut self) -> Generator<'_, T, Self>
    where
        Self: Sized,
    {
        Generator { rng: self, marker: std::marker::PhantomData }
    }

    fn gen_ascii_chars(&mut self) -> AsciiGenerator<'_, Self>
    where
        Self: Sized,
    {
        AsciiGenerator { rng: self }
    }

    fn choose<'a, T>(&mut self, values: &'a [T]) -> Option<&'a T>
    where
        Self: Sized,
    {
        if values.is_empty() {
            None
        } else {
            Some(&values[self.gen_range(0, values.len())])
        }
    }

    fn choose_mut<'a, T>(&mut self, values: &'a mut [T]) -> Option<&'a mut T>
    where
        Self: Sized,
    {
        if values.is_empty() {
            None
        } else {
            let index = self.gen_range(0, values.len());
            Some(&mut values[index])
        }
    }

    fn shuffle<T>(&mut self, values: &mut [T])
    where
        Self: Sized,
    {
        let mut i = values.len();
        while i >= 2 {
            i -= 1;
            values.swap(i, self.gen_range(0, i + 1));
        }
    }
}

impl<'a, R: Rng + ?Sized> Rng for &'a mut R {
    fn next_u32(&mut self) -> u32 {
        (**self).next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

impl<R: Rng + ?Sized> Rng for Box<R> {
    fn next_u32(&mut self) -> u32 {
        (**self).next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

/// Types that can be generated at random.
pub trait Rand: Sized {
    fn rand<R: Rng>(rng: &mut R) -> Self;
}

macro_rules! rand_int {
    ($($t:ty),*) => {$(
        impl Rand for $t {
            fn rand<R: Rng>(rng: &mut R) -> $t {
                rng.next_u64() as $t
            }
        }
    )*};
}
rand_int!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Rand for u128 {
    fn rand<R: Rng>(rng: &mut R) -> u128 {
        ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
    }
}

impl Rand for i128 {
    fn rand<R: Rng>(rng: &mut R) -> i128 {
        u128::rand(rng) as i128
    }
}

impl Rand for f32 {
    fn rand<R: Rng>(rng: &mut R) -> f32 {
        rng.next_f32()
    }
}

impl Rand for f64 {
    fn rand<R: Rng>(rng: &mut R) -> f64 {
        rng.next_f64()
    }
}

impl Rand for bool {
    fn rand<R: Rng>(rng: &mut R) -> bool {
        rng.next_u32() & 1 == 1
    }
}

impl Rand for char {
    fn rand<R: Rng>(rng: &mut R) -> char {
        loop {
            if let Some(c) = std::char::from_u32(rng.next_u32() & 0x10_ffff) {
                return c;
            }
        }
    }
}

impl Rand for () {
    fn rand<R: Rng>(_: &mut R) {}
}

impl<A: Rand, B: Rand> Rand for (A, B) {
    fn rand<R: Rng>(rng: &mut R) -> (A, B) {
        let a = A::rand(rng);
        (a, B::rand(rng))
    }
}

impl<A: Rand, B: Rand, C: Rand> Rand for (A, B, C) {
    fn rand<R: Rng>(rng: &mut R) -> (A, B, C) {
        let a = A::rand(rng);
        let b = B::rand(rng);
        (a, b, C::rand(rng))
    }
}

impl<T: Rand> Rand for Option<T> {
    fn rand<R: Rng>(rng: &mut R) -> Option<T> {
        if rng.gen::<bool>() {
            Some(T::rand(rng))
        } else {
            None
        }
    }
}

/// Types `gen_range` can draw from.
pub trait SampleRange: Sized {
    fn sample_range<R: Rng>(rng: &mut R, low: Self, high: Self) -> Self;
}

macro_rules! sample_int {
    ($($t:ty => $unsigned:ty),*) => {$(
        impl SampleRange for $t {
            fn sample_range<R: Rng>(rng: &mut R, low: $t, high: $t) -> $t {
                // Rejection sampling over the largest multiple of the range: unbiased.
                let range = high.wrapping_sub(low) as $unsigned as u128;
                let zone = u128::MAX - u128::MAX % range;
                loop {
                    let value = u128::rand(rng);
                    if value < zone {
                        return low.wrapping_add((value % range) as $t);
                    }
                }
            }
        }
    )*};
}
sample_int!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, usize => usize,
            i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize);

macro_rules! sample_float {
    ($($t:ty => $next:ident),*) => {$(
        impl SampleRange for $t {
            fn sample_range<R: Rng>(rng: &mut R, low: $t, high: $t) -> $t {
                low + (high - low) * rng.$next()
            }
        }
    )*};
}
sample_float!(f32 => next_f32, f64 => next_f64);

/// xoshiro256**: small, fast, and good enough for test data.
#[derive(Clone, Debug)]
pub struct XorShiftRng {
    state: [u64; 4],
}

impl XorShiftRng {
    fn from_seed_u64(mut seed: u64) -> XorShiftRng {
        let mut state = [0u64; 4];
        for word in state.iter_mut() {
            // splitmix64 spreads one seed over the four words.
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *word = z ^ (z >> 31);
        }
        XorShiftRng { state }
    }

    pub fn new_unseeded() -> XorShiftRng {
        XorShiftRng::from_seed_u64(0)
    }
}

impl Rng for XorShiftRng {
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
}

/// Seeding from a value, as rand 0.4's `SeedableRng`.
pub trait SeedableRng<Seed>: Rng {
    fn reseed(&mut self, seed: Seed);
    fn from_seed(seed: Seed) -> Self;
}

impl SeedableRng<u64> for XorShiftRng {
    fn reseed(&mut self, seed: u64) {
        *self = XorShiftRng::from_seed_u64(seed);
    }
    fn from_seed(seed: u64) -> XorShiftRng {
        XorShiftRng::from_seed_u64(seed)
    }
}

impl<'a> SeedableRng<&'a [u32]> for XorShiftRng {
    fn reseed(&mut self, seed: &'a [u32]) {
        *self = XorShiftRng::from_seed(seed);
    }
    fn from_seed(seed: &'a [u32]) -> XorShiftRng {
        let folded = seed.iter().fold(0u64, |acc, &w| acc.rotate_left(32) ^ w as u64);
        XorShiftRng::from_seed_u64(folded)
    }
}

fn os_seed() -> u64 {
    // The standard library seeds `RandomState` from the operating system.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    hasher.finish()
}

/// The standard generator, seeded from the operating system.
#[derive(Clone, Debug)]
pub struct StdRng(XorShiftRng);

impl StdRng {
    pub fn new() -> std::io::Result<StdRng> {
        Ok(StdRng(XorShiftRng::from_seed_u64(os_seed())))
    }
}

impl Rng for StdRng {
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

pub type OsRng = StdRng;

/// A handle to this thread's generator.
#[derive(Clone, Debug)]
pub struct ThreadRng {
    rng: Rc<RefCell<XorShiftRng>>,
}

thread_local! {
    static THREAD_RNG: Rc<RefCell<XorShiftRng>> =
        Rc::new(RefCell::new(XorShiftRng::from_seed_u64(os_seed())));
}

pub fn thread_rng() -> ThreadRng {
    ThreadRng { rng: THREAD_RNG.with(|rng| rng.clone()) }
}

impl Rng for ThreadRng {
    fn next_u64(&mut self) -> u64 {
        self.rng.borrow_mut().next_u64()
    }
}

pub fn random<T: Rand>() -> T {
    thread_rng().gen()
}

pub fn weak_rng() -> XorShiftRng {
    XorShiftRng::from_seed_u64(os_seed())
}

/// `amount` elements of `iterable`, chosen uniformly (reservoir sampling), as 0.4's
/// `rand::sample`.
pub fn sample<T, I, R>(rng: &mut R, iterable: I, amount: usize) -> Vec<T>
where
    I: IntoIterator<Item = T>,
    R: Rng,
{
    let mut iter = iterable.into_iter();
    let mut reservoir: Vec<T> = iter.by_ref().take(amount).collect();
    for (i, elem) in iter.enumerate() {
        let k = rng.gen_range(0, i + 1 + amount);
        if let Some(slot) = reservoir.get_mut(k) {
            *slot = elem;
        }
    }
    reservoir
}

/// An endless iterator of random values (`rng.gen_iter()`).
pub struct Generator<'a, T, R: 'a> {
    rng: &'a mut R,
    marker: std::marker::PhantomData<fn() -> T>,
}

impl<'a, T: Rand, R: Rng> Iterator for Generator<'a, T, R> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        Some(self.rng.gen())
    }
}

/// An endless iterator of random ASCII letters and digits (`rng.gen_ascii_chars()`).
pub struct AsciiGenerator<'a, R: 'a> {
    rng: &'a mut R,
}

impl<'a, R: Rng> Iterator for AsciiGenerator<'a, R> {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        Some(CHARSET[self.rng.gen_range(0, CHARSET.len())] as char)
    }
}

pub mod distributions {
    //! rand 0.4's `Range` distribution, for code that samples through it.
    use super::{Rng, SampleRange};

    pub trait Sample<Support> {
        fn sample<R: Rng>(&mut self, rng: &mut R) -> Support;
    }

    pub trait IndependentSample<Support>: Sample<Support> {
        fn ind_sample<R: Rng>(&self, rng: &mut R) -> Support;
    }

    #[derive(Clone, Copy, Debug)]
    pub struct Range<X> {
        low: X,
        high: X,
    }

    impl<X: PartialOrd + Copy> Range<X> {
        pub fn new(low: X, high: X) -> Range<X> {
            assert!(low < high, "Range::new called with `low >= high`");
            Range { low, high }
        }
    }

    impl<X: PartialOrd + Copy + SampleRange> Sample<X> for Range<X> {
        fn sample<R: Rng>(&mut self, rng: &mut R) -> X {
            X::sample_range(rng, self.low, self.high)
        }
    }

    impl<X: PartialOrd + Copy + SampleRange> IndependentSample<X> for Range<X> {
        fn ind_sample<R: Rng>(&self, rng: &mut R) -> X {
            X::sample_range(rng, self.low, self.high)
        }
    }
}

pub mod prelude {
    pub use super::{random, thread_rng, Rand, Rng, SeedableRng};
}
