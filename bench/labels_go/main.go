// Command labels_go measures Go's profiler-label costs on this machine, for
// bench/labels to compare against: pprof.Do with a prebuilt 2-label set, and
// pprof.Labels building a 2-pair set. Prints "go_do_ns=<n> go_labels_ns=<n>".
package main

import (
	"context"
	"fmt"
	"runtime/pprof"
	"testing"
)

var sink pprof.LabelSet

func main() {
	set := pprof.Labels("endpoint", "/checkout", "tenant", "acme")
	ctx := context.Background()
	do := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			pprof.Do(ctx, set, func(context.Context) {})
		}
	})
	build := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = pprof.Labels("endpoint", "/checkout", "tenant", "acme")
		}
	})
	fmt.Printf("go_do_ns=%.1f go_labels_ns=%.1f\n",
		float64(do.T.Nanoseconds())/float64(do.N), float64(build.T.Nanoseconds())/float64(build.N))
}
