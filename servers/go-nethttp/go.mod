module serverlab/go-nethttp

// 1.25: with a go line of 1.25 or later the runtime's default GOMAXPROCS
// honours the cgroup CPU limit (GODEBUG containermaxprocs); 1.22 would be
// enough for the method and {$} ServeMux patterns.
go 1.25.0

require serverlab/contract v0.0.0

replace serverlab/contract => ../_shared/go
