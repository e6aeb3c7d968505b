// SPDX-License-Identifier: MIT
// Go workload of the conformance suite (tests/suites/80-conformance.sh):
// recursion, a method, maps, sort and a goroutine.  Go writes no
// .debug_aranges and names functions without linkage names.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
)

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

type T struct{ m map[int]string }

//go:noinline
func (t *T) fill(n int) {
	for i := 0; i < n; i++ {
		t.m[i%1000] = strconv.Itoa(i)
	}
}

func main() {
	n := 20
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	s := 0
	t := &T{m: map[int]string{}}
	done := make(chan int)
	go func() { done <- fib(27) }()
	for i := 0; i < n; i++ {
		s += fib(22)
		t.fill(20000)
		a := make([]int, 20000)
		for j := range a {
			a[j] = (j * 7919) % 10007
		}
		sort.Ints(a)
	}
	fmt.Println(s, len(t.m), <-done)
}
