// Leased: muyo/sno's own generator on a partition and sequence slice leased from PostgreSQL.
// IDs are made in the process (no round trip per ID) and only inside the lease's window:
// outside it New returns an error, never an ID. The lease is renewed in the background.
// (Package main here, for its test program: put it in a package of yours.)
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/muyo/sno"
)

// Lease is a row of sno_lease_acquire or sno_lease_renew.
type Lease struct {
	Lease                            int64
	Token                            string
	Partition, SeqMin, SeqMax        int
	NotBefore, ExpiresAt, RenewAfter time.Time
}

// Leased makes IDs with one muyo/sno generator per lease, switching to a new lease when the
// registry no longer renews the current one. Safe for concurrent use.
type Leased struct {
	db        *sql.DB // each call is committed by the registry before it returns
	holder    string
	ttl       time.Duration
	sequences int
	stop      chan struct{}
	done      chan struct{}

	mu     sync.Mutex // serialises gen.New (concurrent calls can repeat a sequence at a unit change)
	lease  Lease
	gen    *sno.Generator // one per lease
	nb, ex int64          // the window [nb, ex), in units
}

// unit is sno's time unit: 4 ms since 2010-01-01 UTC.
func unit(t time.Time) int64 { return (t.UnixNano() - 1262304000e9) / 4e6 }

// NewLeased acquires a lease of ttl with a slice of sequences numbers (a power of 2, 8..65536).
func NewLeased(db *sql.DB, holder string, ttl time.Duration, sequences int) (*Leased, error) {
	g := &Leased{db: db, holder: holder, ttl: ttl, sequences: sequences,
		stop: make(chan struct{}), done: make(chan struct{})}
	l, err := g.acquire()
	if err == nil {
		err = g.use(l)
	}
	if err != nil {
		return nil, err
	}
	go g.renew()
	return g, nil
}

// New returns an ID stamped inside the lease's window, or an error.
func (g *Leased) New(meta byte) (sno.ID, error) {
	id, _, err := g.NewInLease(meta)
	return id, err
}

// NewInLease is New, also giving the lease the ID was stamped in.
func (g *Leased) NewInLease(meta byte) (sno.ID, int64, error) {
	for waited := 0; ; waited++ {
		g.mu.Lock()
		id, lease, nb, ex := g.gen.New(meta), g.lease.Lease, g.nb, g.ex
		g.mu.Unlock()
		switch u := unit(id.Time()); {
		case u >= ex:
			return sno.ID{}, lease, fmt.Errorf("sno lease %d: past its window (not renewed, or closed)", lease)
		case u >= nb:
			return id, lease, nil
		case waited == 250: // about a second
			return sno.ID{}, lease, fmt.Errorf("sno lease %d: this clock is behind the window's start", lease)
		}
		time.Sleep(4 * time.Millisecond)
	}
}

// Close stops renewing and releases the lease; New refuses from then on.
func (g *Leased) Close() error {
	close(g.stop)
	<-g.done
	g.mu.Lock()
	l := g.lease
	g.ex = 0
	g.mu.Unlock()
	return g.release(l)
}

// renew renews the lease at renew_after. A lease the registry no longer renews (55000: expired,
// released or from before a failover; 42501) is replaced by a new one. Any other error is retried
// with backoff, while New stamps until the window ends and then refuses.
func (g *Leased) renew() {
	defer close(g.done)
	backoff := 100 * time.Millisecond
	g.mu.Lock()
	next := g.lease.RenewAfter
	g.mu.Unlock()
	for {
		select {
		case <-g.stop:
			return
		case <-time.After(time.Until(next)):
		}
		g.mu.Lock()
		old := g.lease
		g.mu.Unlock()
		l, err := g.call("sno_lease_renew(lease => $1, token => $2::uuid, ttl => make_interval(secs => $3))",
			old.Lease, old.Token, g.ttl.Seconds())
		if err == nil { // the same lease, a later expires_at
			g.mu.Lock()
			g.lease, g.ex = l, unit(l.ExpiresAt)
			g.mu.Unlock()
		} else if code := sqlState(err); code == "55000" || code == "42501" {
			if l, err = g.acquire(); err == nil {
				err = g.use(l)
				_ = g.release(old)
			}
		}
		if err != nil {
			log.Printf("sno lease %d: %v (retry in %v)", old.Lease, err, backoff)
			next = time.Now().Add(backoff)
			if backoff *= 2; backoff > g.ttl/4 {
				backoff = g.ttl / 4
			}
			continue
		}
		next, backoff = l.RenewAfter, 100*time.Millisecond
	}
}

// use switches to lease l: a new generator on its partition and slice.
func (g *Leased) use(l Lease) error {
	gen, err := sno.NewGenerator(&sno.GeneratorSnapshot{
		Partition:   sno.Partition{byte(l.Partition >> 8), byte(l.Partition)},
		SequenceMin: uint16(l.SeqMin),
		SequenceMax: uint16(l.SeqMax),
	}, nil)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.lease, g.gen, g.nb, g.ex = l, gen, unit(l.NotBefore), unit(l.ExpiresAt)
	g.mu.Unlock()
	return nil
}

func (g *Leased) acquire() (Lease, error) {
	return g.call("sno_lease_acquire(holder => $1, ttl => make_interval(secs => $2), sequences => $3)",
		g.holder, g.ttl.Seconds(), g.sequences)
}

func (g *Leased) call(fn string, args ...any) (l Lease, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = g.db.QueryRowContext(ctx, "SELECT lease, token::text, partition, sequence_min, sequence_max, "+
		"not_before, expires_at, renew_after FROM "+fn, args...).Scan(&l.Lease, &l.Token,
		&l.Partition, &l.SeqMin, &l.SeqMax, &l.NotBefore, &l.ExpiresAt, &l.RenewAfter)
	return l, err
}

func (g *Leased) release(l Lease) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := g.db.ExecContext(ctx, "SELECT sno_lease_release(lease => $1, token => $2::uuid)", l.Lease, l.Token)
	return err
}

// sqlState is the SQLSTATE of a server error (lib/pq's and pgx's errors both have SQLState()).
func sqlState(err error) string {
	var e interface{ SQLState() string }
	if errors.As(err, &e) {
		return e.SQLState()
	}
	return ""
}
