"""HumanEval-X+: HumanEval+'s inputs as typed tests of C++, Java, JavaScript, Go and Rust
(`python -m evaluator datasets build-plus`; see docs/humaneval-x-plus.md)."""
