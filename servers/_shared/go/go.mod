module serverlab/contract

// 1.24: the benchmarks use testing.B.Loop. The stacks that import this
// module declare a newer version of their own.
go 1.24.0
