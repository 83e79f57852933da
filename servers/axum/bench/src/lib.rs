//! Nothing but the benchmark in benches/contract.rs.
