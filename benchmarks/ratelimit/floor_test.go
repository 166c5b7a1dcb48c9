package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Without refusals the ideal runner is ceil(n/conc) calls back to back.
func TestFloorWithoutRefusals(t *testing.T) {
	c := floorCase{n: 1000, conc: 16, latency: 50 * time.Millisecond}
	if got, want := floorWall(c, rand.New(rand.NewPCG(1, 0))), 63*50*time.Millisecond; got != want {
		t.Fatalf("floorWall = %v, want %v", got, want)
	}
}

// Every call refused once, exactly: p = 1 would never end, so use one cell and count by hand with a stub draw.
// A single cell alone: its wall is k refusals × (latency + Retry-After) + latency.
func TestFloorOneCellChain(t *testing.T) {
	c := floorCase{n: 1, conc: 16, latency: 50 * time.Millisecond, p: 0.5, retryAfter: time.Second}
	rng := rand.New(rand.NewPCG(3, 0))
	probe := rand.New(rand.NewPCG(3, 0))
	k := 0
	for probe.Float64() < c.p {
		k++
	}
	want := time.Duration(k)*(c.latency+c.retryAfter) + c.latency
	if got := floorWall(c, rng); got != want {
		t.Fatalf("floorWall = %v, want %v (%d refusals)", got, want, k)
	}
}

// The floor of a case with refusals is never below the clean floor, and grows with the Retry-After.
func TestFloorGrowsWithRetryAfter(t *testing.T) {
	clean := floorCase{n: 1000, conc: 16, latency: 50 * time.Millisecond}
	_, c0, _ := floorQuantiles(clean, 50, 1)
	short, long := clean, clean
	short.p, short.retryAfter = 0.2, time.Second
	long.p, long.retryAfter = 0.2, 5*time.Second
	_, s, _ := floorQuantiles(short, 50, 1)
	_, l, _ := floorQuantiles(long, 50, 1)
	if !(c0 < s && s < l) {
		t.Fatalf("floors clean %v, Retry-After 1 s %v, 5 s %v: want increasing", c0, s, l)
	}
}
