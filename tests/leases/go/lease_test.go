package main

// The window check of lease.go without a server: a Leased on a hand-made lease whose window is
// before, around or after this clock's now. Run by tests/client/lease_go.sh (go test).

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muyo/sno"
)

// leasedAt is a Leased (no renewal) on partition 65535, slice 8..15, window [from, to) from now.
func leasedAt(t *testing.T, from, to time.Duration) *Leased {
	g := &Leased{}
	now := time.Now()
	floor := func(t time.Time) time.Time { return t.Truncate(4 * time.Millisecond) }
	l := Lease{Lease: 1, Partition: 65535, SeqMin: 8, SeqMax: 15,
		NotBefore: floor(now.Add(from)), ExpiresAt: floor(now.Add(to))}
	if err := g.use(l); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestInsideWindow(t *testing.T) {
	g := leasedAt(t, -time.Second, 10*time.Second) // 8 numbers a unit: 2,000 IDs a second
	var mu sync.Mutex
	seen := map[sno.ID]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				id, lease, err := g.NewInLease(7)
				if err != nil || lease != 1 {
					t.Errorf("New: %v, lease %d", err, lease)
					return
				}
				if id.Partition() != (sno.Partition{0xff, 0xff}) || id.Sequence() < 8 || id.Sequence() > 15 || id.Meta() != 7 {
					t.Errorf("ID %s: partition %v, sequence %d, meta %d", id, id.Partition(), id.Sequence(), id.Meta())
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("ID %s twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 2000 {
		t.Errorf("%d distinct IDs, want 2000", len(seen))
	}
}

func TestPastWindowRefused(t *testing.T) {
	g := leasedAt(t, -2*time.Second, -time.Second)
	if id, err := g.New(0); err == nil || !strings.Contains(err.Error(), "past its window") || !id.IsZero() {
		t.Errorf("New after the window: %s, %v", id, err)
	}
}

func TestClosedRefused(t *testing.T) {
	g := leasedAt(t, -time.Second, time.Minute)
	g.ex = 0 // as Close leaves it (without a server to release)
	if id, err := g.New(0); err == nil || !id.IsZero() {
		t.Errorf("New after Close: %s, %v", id, err)
	}
}

func TestClockBehindWaits(t *testing.T) {
	g := leasedAt(t, 300*time.Millisecond, time.Minute)
	start := time.Now()
	id, err := g.New(0)
	if err != nil || id.Time().Before(g.lease.NotBefore) || time.Since(start) < 250*time.Millisecond {
		t.Errorf("New 0.3 s before the window: %s (%v), %v after %v", id, id.Time(), err, time.Since(start))
	}
}

func TestClockFarBehindRefused(t *testing.T) {
	g := leasedAt(t, 3*time.Second, time.Minute)
	start := time.Now()
	id, err := g.New(0)
	if err == nil || !strings.Contains(err.Error(), "behind") || !id.IsZero() || time.Since(start) > 2*time.Second {
		t.Errorf("New 3 s before the window: %s, %v after %v", id, err, time.Since(start))
	}
}
