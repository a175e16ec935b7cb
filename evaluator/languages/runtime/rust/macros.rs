macro_rules! assert {
    ($cond:expr $(,)?) => {{
        ::evaluator_harness::check(line!(), "", ::std::boxed::Box::new(|| {
            let ok: bool = $cond;
            (ok, ::std::string::String::from("true"), ::std::string::String::from(if ok { "true" } else { "false" }), ::std::option::Option::None)
        }))
    }};
    ($cond:expr, $($arg:tt)+) => {{
        ::evaluator_harness::check(line!(), "", ::std::boxed::Box::new(|| {
            let ok: bool = $cond;
            (ok, ::std::string::String::from("true"), ::std::string::String::from(if ok { "true" } else { "false" }), if ok { ::std::option::Option::None } else { ::std::option::Option::Some(::std::format!($($arg)+)) })
        }))
    }};
}
macro_rules! __evaluator_compare {
    ($left:expr, $op:tt, $right:expr, $label:expr, $($arg:tt)*) => {{
        ::evaluator_harness::check(line!(), $label, ::std::boxed::Box::new(|| {
            match (&$left, &$right) {
                (left, right) => {
                    #[allow(unused_imports)]
                    use ::evaluator_harness::{ViaDebug as _, ViaNone as _};
                    let ok: bool = *left $op *right;
                    (ok, (&&::evaluator_harness::Show(right)).shown(), (&&::evaluator_harness::Show(left)).shown(), if ok { ::std::option::Option::None } else { ::std::option::Option::Some(::std::format!($($arg)*)) })
                }
            }
        }))
    }};
}
macro_rules! assert_eq {
    ($left:expr, $right:expr $(,)?) => { __evaluator_compare!($left, ==, $right, "", "assertion failed: left == right") };
    ($left:expr, $right:expr, $($arg:tt)+) => { __evaluator_compare!($left, ==, $right, "", $($arg)+) };
}
macro_rules! assert_ne {
    ($left:expr, $right:expr $(,)?) => { __evaluator_compare!($left, !=, $right, "not ", "assertion failed: left != right") };
    ($left:expr, $right:expr, $($arg:tt)+) => { __evaluator_compare!($left, !=, $right, "not ", $($arg)+) };
}
macro_rules! __evaluator_assert_eq {
    ($left:expr, $right:expr) => { __evaluator_compare!($left, ==, $right, "", "assertion failed") };
}
macro_rules! __evaluator_assert_ne {
    ($left:expr, $right:expr) => { __evaluator_compare!($left, !=, $right, "not ", "assertion failed") };
}
