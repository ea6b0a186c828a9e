// Command sno-lease-go runs the Go recipe of doc/services.md (lease.go, printed there verbatim):
// a few leased muyo/sno generators, each called by several goroutines at once, for a while.
// It is the program of tests/client/lease_go.sh (the fleet trial has its own, tests/leases/fleet/go).
//
// Every ID made is written with the lease it was stamped in: by default to stdout as lines
// "ID<tab>LEASE" (the 16-character text form; COPY's text format), or with -table T inserted
// into T (id sno, lease bigint, batch text), 500 rows a statement; a failed insert is retried,
// so a batch whose commit was lost shows as the same batch label twice, not as a duplicate.
// At the end (after -seconds, or SIGTERM/SIGINT) the leases are released and one line
// "sno-lease-go: ids=N refused=N leases=N" goes to stderr; refusals (New's errors: no ID)
// are counted, the first few printed to stderr.
//
// Usage: sno-lease-go -dsn DSN [-driver pgx|postgres] [-generators 3] [-workers 4] [-seconds 10] [-ttl 2s]
//
//	[-sequences 1024] [-burst 10] [-holder NAME] [-table T [-insert-dsn DSN]]
//
// Built in GOPATH mode (GO111MODULE=off) with the real github.com/muyo/sno (../shared/muyo-sno)
// and Debian's pgx v4 and lib/pq (/usr/share/gocode), as tests/client/lease_go.sh does. The
// leases go through database/sql with pgx by default, lib/pq with -driver postgres; -table
// inserts through pgx.
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
	_ "github.com/lib/pq"
	"github.com/muyo/sno"
)

type record struct {
	id    sno.ID
	lease int64
}

func main() {
	dsn := flag.String("dsn", "", "connection string of the registry (a role allowed to lease)")
	driver := flag.String("driver", "pgx", "the database/sql driver of the leases: pgx (v4) or postgres (lib/pq)")
	generators := flag.Int("generators", 3, "leased generators (one lease each at a time)")
	workers := flag.Int("workers", 4, "goroutines calling New on each generator")
	seconds := flag.Float64("seconds", 10, "how long to generate")
	ttl := flag.Duration("ttl", 2*time.Second, "the leases' ttl")
	sequences := flag.Int("sequences", 1024, "sequence numbers per lease (a power of 2, 8..65536)")
	burst := flag.Int("burst", 10, "IDs each worker makes per 10 ms (0: as fast as it can)")
	holder := flag.String("holder", "", "the leases' holder (default go-HOST-PID)")
	table := flag.String("table", "", "insert into this table (id, lease, batch) instead of printing")
	insertDSN := flag.String("insert-dsn", "", "connection string for -table (default -dsn)")
	flag.Parse()
	if *dsn == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *holder == "" {
		host, _ := os.Hostname()
		*holder = fmt.Sprintf("go-%s-%d", host, os.Getpid())
	}
	db, err := sql.Open(*driver, *dsn)
	if err != nil {
		fatal(err)
	}
	defer db.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(*seconds*float64(time.Second)))
	defer cancel()

	out := make(chan record, 100000)
	written := make(chan error)
	if *table != "" {
		if *insertDSN == "" {
			insertDSN = dsn
		}
		go func() { written <- insertAll(*insertDSN, *table, *holder, out) }()
	} else {
		go func() { written <- printAll(out) }()
	}

	var ids, refused atomic.Int64
	var leasesMu sync.Mutex
	leases := map[int64]bool{}
	var wg sync.WaitGroup
	var gens []*Leased
	for i := 0; i < *generators; i++ {
		g, err := NewLeased(db, fmt.Sprintf("%s-%d", *holder, i), *ttl, *sequences)
		if err != nil {
			fatal(fmt.Errorf("acquire: %w", err))
		}
		gens = append(gens, g)
		for w := 0; w < *workers; w++ {
			wg.Add(1)
			go func(meta byte) {
				defer wg.Done()
				seen := map[int64]bool{}
				for ctx.Err() == nil {
					for n := 0; n < *burst || *burst == 0 && n < 1000; n++ {
						id, lease, err := g.NewInLease(meta)
						if err != nil {
							if refused.Add(1) <= 5 {
								fmt.Fprintln(os.Stderr, "refused:", err)
							}
							time.Sleep(10 * time.Millisecond)
							break
						}
						ids.Add(1)
						out <- record{id, lease}
						if !seen[lease] {
							seen[lease] = true
							leasesMu.Lock()
							leases[lease] = true
							leasesMu.Unlock()
						}
					}
					if *burst > 0 {
						time.Sleep(10 * time.Millisecond)
					}
				}
			}(byte(i*16 + w))
		}
	}
	wg.Wait()
	for _, g := range gens {
		if err := g.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
		}
	}
	close(out)
	if err := <-written; err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "sno-lease-go: ids=%d refused=%d leases=%d\n", ids.Load(), refused.Load(), len(leases))
}

func printAll(out <-chan record) error {
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	for r := range out {
		fmt.Fprintf(w, "%s\t%d\n", r.id, r.lease)
	}
	return w.Flush()
}

// insertAll inserts the records 500 a statement, each batch labelled HOLDER/N, retrying a
// failed statement (every 200 ms, for up to a minute).
func insertAll(dsn, table, holder string, out <-chan record) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var batch []record
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n++
		label := fmt.Sprintf("%s/%d", holder, n)
		var q strings.Builder
		args := []any{label}
		fmt.Fprintf(&q, "INSERT INTO %s (id, lease, batch) VALUES ", table)
		for i, r := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "($%d::text::sno, $%d::bigint, $1)", len(args)+1, len(args)+2)
			args = append(args, r.id.String(), r.lease)
		}
		var err error
		for try := 0; try < 300; try++ {
			if _, err = db.Exec(q.String(), args...); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		batch = batch[:0]
		return err
	}
	for r := range out {
		if batch = append(batch, r); len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "sno-lease-go:", err)
	os.Exit(1)
}
