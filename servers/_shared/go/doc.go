// Package contract implements the serverlab HTTP contract (v1) once for
// every Go stack: the trading-day rule over the shared XSHG calendar, strict
// parsing of the n and at query parameters, the pre-built n-KB bodies, the
// hello text, and configuration from the environment.
//
// Stacks only route requests and write what [Service] returns, so the Go
// stacks differ in their HTTP layer and in nothing else.
package contract
