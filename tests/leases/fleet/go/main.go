// Command sno-lease-fleet-go is the Go member of the fleet trial (tests/client/lease_fleet.sh):
// the recipe's Leased (tests/leases/go/lease.go, copied beside this file at build time: the
// same package main) on one lease at a time, called by a few goroutines, for a while.
//
// Unlike the recipe's own program (tests/leases/go/main.go), it records what the trial needs
// to check every ID against the lease it was stamped in, also for leases that the promoted
// registry never heard of (granted in the lost tail of an asynchronous failover):
//   - -leases FILE: a line per lease it was given and each later expires_at (renewals):
//     "TOKEN<tab>LEASE<tab>PARTITION<tab>SEQUENCE_MIN<tab>SEQUENCE_MAX<tab>NOT_BEFORE<tab>EXPIRES_AT<tab>HOLDER";
//   - -out FILE: a line per ID, "ID<tab>TOKEN" (the lease's token: unique across registries,
//     where lease numbers are not), written (and flushed) before the ID goes anywhere else,
//     so that a process killed with SIGKILL leaves every ID it let out of it in the file;
//   - -table T -data-dsn DSN: then each batch inserted into T (id, lease, batch, token).
//
// The lease an ID was stamped in: NewInLease gives its number; the lease's details are read
// from the generator (under its lock) after each ID and every 20 ms, keyed by number and
// partition (the ID's own partition), so a switch to a new lease between the two is no
// confusion. An ID whose lease was never seen is written with an empty token (the trial
// counts those as failures).
//
// The acquire is retried (every 200 ms) while the registry is down or a standby. At the end
// (-seconds, SIGTERM or SIGINT) the lease is released and one line goes to stderr:
// "fleet-go: ids=N refused=N leases=N". Refusals (NewInLease's errors) are counted, the first
// few printed with the time.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v4/stdlib"
	"github.com/muyo/sno"
)

type key struct {
	lease     int64
	partition int
}

type record struct {
	id    sno.ID
	lease int64
	token string
}

// book: every lease this process was given, with the latest expires_at it was told.
type book struct {
	mu    sync.Mutex
	known map[key]Lease
	dirty []Lease // not yet written to the leases file
}

func (b *book) note(l Lease) {
	if l.Token == "" {
		return
	}
	k := key{l.Lease, l.Partition}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.known[k]; !ok || l.ExpiresAt.After(old.ExpiresAt) || old.Token != l.Token {
		b.known[k] = l
		b.dirty = append(b.dirty, l)
	}
}

func (b *book) token(k key) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known[k].Token
}

func (b *book) take() []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.dirty
	b.dirty = nil
	return d
}

func main() {
	dsn := flag.String("dsn", "", "the registry (multi-host: host=A,B ... target_session_attrs=read-write)")
	holder := flag.String("holder", "", "the leases' holder")
	seconds := flag.Float64("seconds", 10, "how long to generate")
	ttl := flag.Duration("ttl", 2*time.Second, "the leases' ttl")
	sequences := flag.Int("sequences", 1024, "sequence numbers per lease")
	workers := flag.Int("workers", 2, "goroutines calling NewInLease")
	burst := flag.Int("burst", 5, "IDs each worker makes per 10 ms")
	out := flag.String("out", "", "the IDs file")
	leasesOut := flag.String("leases", "", "the leases file")
	table := flag.String("table", "", "also insert into this table (id, lease, batch, token)")
	dataDSN := flag.String("data-dsn", "", "the server of -table")
	flag.Parse()
	if *dsn == "" || *out == "" || *leasesOut == "" || *holder == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(*seconds*float64(time.Second)))
	defer cancel()

	idsF, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fatal(err)
	}
	leasesF, err := os.OpenFile(*leasesOut, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fatal(err)
	}
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		fatal(err)
	}
	defer db.Close()
	var data *sql.DB
	if *table != "" {
		if data, err = sql.Open("pgx", *dataDSN); err != nil {
			fatal(err)
		}
		defer data.Close()
	}

	var g *Leased
	for {
		if g, err = NewLeased(db, *holder, *ttl, *sequences); err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "%s acquire: %v (again in 200 ms)\n", stamp(), err)
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "fleet-go: ids=0 refused=0 leases=0")
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	b := &book{known: map[key]Lease{}}
	snapshot := func() {
		g.mu.Lock()
		l := g.lease
		g.mu.Unlock()
		b.note(l)
	}
	snapshot()
	go func() {
		for ctx.Err() == nil {
			snapshot()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	records := make(chan record, 100000)
	written := make(chan error)
	go func() { written <- writeAll(records, b, idsF, leasesF, data, *table, *holder) }()

	var ids, refused atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(meta byte) {
			defer wg.Done()
			for ctx.Err() == nil {
				for n := 0; n < *burst; n++ {
					id, lease, err := g.NewInLease(meta)
					if err != nil {
						if refused.Add(1) <= 5 {
							fmt.Fprintf(os.Stderr, "%s refused: %v\n", stamp(), err)
						}
						time.Sleep(10 * time.Millisecond)
						break
					}
					snapshot()
					ids.Add(1)
					records <- record{id, lease, b.token(key{lease, int(id.Partition().AsUint16())})}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}(byte(w))
	}
	wg.Wait()
	snapshot()
	if err := g.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
	}
	close(records)
	if err := <-written; err != nil {
		fatal(err)
	}
	b.mu.Lock()
	n := len(b.known)
	b.mu.Unlock()
	fmt.Fprintf(os.Stderr, "fleet-go: ids=%d refused=%d leases=%d\n", ids.Load(), refused.Load(), n)
}

// writeAll writes the records (and the leases noted before them) every 50 ms or 1000 IDs,
// flushed to the files before they are inserted into the table.
func writeAll(records <-chan record, b *book, idsF, leasesF *os.File, data *sql.DB, table, holder string) error {
	iw := bufio.NewWriterSize(idsF, 1<<16)
	lw := bufio.NewWriterSize(leasesF, 1<<12)
	var batch []record
	n := 0
	flush := func() error {
		for _, l := range b.take() {
			fmt.Fprintf(lw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", l.Token, l.Lease, l.Partition, l.SeqMin, l.SeqMax,
				l.NotBefore.UTC().Format(time.RFC3339Nano), l.ExpiresAt.UTC().Format(time.RFC3339Nano), holder)
		}
		if err := lw.Flush(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			fmt.Fprintf(iw, "%s\t%s\n", r.id, r.token)
		}
		if err := iw.Flush(); err != nil {
			return err
		}
		if data != nil {
			n++
			if err := insert(data, table, fmt.Sprintf("%s/%d", holder, n), batch); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-records:
			if !ok {
				return flush()
			}
			if batch = append(batch, r); len(batch) >= 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// insert: one statement per batch, retried every 200 ms for up to a minute.
func insert(data *sql.DB, table, label string, batch []record) error {
	var q strings.Builder
	args := []any{label}
	fmt.Fprintf(&q, "INSERT INTO %s (id, lease, batch, token) VALUES ", table)
	for i, r := range batch {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "($%d::text::sno, $%d::bigint, $1, nullif($%d, '')::uuid)", len(args)+1, len(args)+2, len(args)+3)
		args = append(args, r.id.String(), r.lease, r.token)
	}
	var err error
	for try := 0; try < 300; try++ {
		if _, err = data.Exec(q.String(), args...); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

func stamp() string { return time.Now().UTC().Format("15:04:05.000") }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "fleet-go:", err)
	os.Exit(1)
}
