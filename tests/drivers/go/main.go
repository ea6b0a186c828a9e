// Command sno-drivers-go checks the Go drivers against a live server with the sno extension:
// lib/pq 1.10 and pgx v4 (native, pooled and through database/sql), as Debian packages them.
// For each case of issue 9 (insert with DEFAULT sno_generate(1), a client-made ID as text and
// as the 10 raw bytes, reads as text and binary, sno[] both ways, an ID as a WHERE parameter)
// it runs either the plain code (works out of the box), the recipe (recipes.go, the README's
// blocks in readme_blocks.go; the README section "Go: lib/pq and pgx v4" shows them), or the plain code that
// fails, asserting that it still fails the documented way (the README's traps).
//
// Usage: sno-drivers-go DSN   (a key=value DSN for lib/pq and pgx, e.g.
// "host=/tmp/x port=5432 user=postgres dbname=d sslmode=disable"; the database must have
// CREATE EXTENSION sno and sno preloaded). Prints ok:/FAIL: lines, exits 1 on any FAIL.
//
// Built by tests/client/drivers_go.sh in GOPATH mode (GO111MODULE=off) from Debian's
// /usr/share/gocode and the stand-in github.com/muyo/sno in standin/.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/muyo/sno"
)

var failed int
var passed int

func ok(what string) {
	passed++
	fmt.Println("ok: go " + what)
}

func bad(what string, format string, args ...interface{}) {
	failed++
	fmt.Printf("FAIL: go %s: %s\n", what, fmt.Sprintf(format, args...))
}

// check reports err == nil as ok.
func check(what string, err error) bool {
	if err != nil {
		bad(what, "%v", err)
		return false
	}
	ok(what)
	return true
}

// same reports got == want (compared as printed by fmt.Sprint).
func same(what string, got, want interface{}) bool {
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		bad(what, "got %s, want %s", clip(g), clip(w))
		return false
	}
	ok(what)
	return true
}

// trap reports ok when err is the documented failure: not nil and containing every one of
// the given strings. A nil error means the README's trap statement is out of date.
func trap(what string, err error, want ...string) {
	if err == nil {
		bad(what, "no error: this documented trap now works, update the README")
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			bad(what, "error %q does not contain %q", err.Error(), w)
			return
		}
	}
	ok(what + " (trap: " + firstLine(err.Error()) + ")")
}

// sizeTrap is trap for muyo/sno's Scan refusing a value of the wrong size (the 16 text bytes
// as a []byte): an *sno.InvalidDataSizeError of size 16 where the driver wraps it (database/sql
// does), its message where it does not (lib/pq's arrays).
func sizeTrap(what string, err error) {
	var e *sno.InvalidDataSizeError
	if errors.As(err, &e) && e.Size != sno.SizeEncoded {
		bad(what, "InvalidDataSizeError of size %d, want %d", e.Size, sno.SizeEncoded)
		return
	}
	trap(what, err, (&sno.InvalidDataSizeError{}).Error())
}

// clip shortens a long value for a FAIL line.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Fields as the server computes them, for comparison with the Go type's accessors.
type fields struct {
	Time                            time.Time
	Meta, Partition, Sequence, Tick int
}

func (f fields) String() string {
	return fmt.Sprintf("%s meta %d partition %d sequence %d tick %d",
		f.Time.UTC().Format("2006-01-02 15:04:05.000"), f.Meta, f.Partition, f.Sequence, f.Tick)
}

func goFields(id sno.ID) fields {
	return fields{id.Time(), int(id.Meta()), int(id.Partition().AsUint16()), int(id.Sequence()), int(id[4] & 1)}
}

// fieldsSQL reads the fields of the row with this ID (given as text, which works out of the
// box with both drivers) as the server computes them.
const fieldsSQL = `SELECT sno_time(id), sno_meta(id), sno_partition(id), sno_sequence(id), sno_tick(id)
	FROM orders WHERE id = $1`

// checkFields compares the fields of the stored row with those of the Go ID.
func checkFields(what string, id sno.ID, scan func(q string, args []interface{}, dest ...interface{}) error) {
	var f fields
	if err := scan(fieldsSQL, []interface{}{id.String()}, &f.Time, &f.Meta, &f.Partition, &f.Sequence, &f.Tick); err != nil {
		bad(what+": fields", "%v", err)
		return
	}
	want := goFields(id)
	if !f.Time.Equal(want.Time) || f.Meta != want.Meta || f.Partition != want.Partition ||
		f.Sequence != want.Sequence || f.Tick != want.Tick {
		bad(what+": fields", "server says %v, the Go ID says %v", f, want)
		return
	}
	ok(what + ": sno_time/meta/partition/sequence/tick equal the ID's (" + f.String() + ")")
}

// clientID makes an ID as a Go service would (time now, the given fields). Meta 255 puts a
// 0xff byte in it, which is never valid UTF-8: raw bytes sent as text fail the same way every
// run.
func clientID(meta byte, partition, sequence uint16) sno.ID {
	units := uint64(time.Now().UnixNano()-sno.Epoch*1e9) / sno.TimeUnit
	var id sno.ID
	v := units << 1 // 39 bits of time, then the tick-tock bit 0
	for i := 4; i >= 0; i-- {
		id[i] = byte(v)
		v >>= 8
	}
	id[5] = meta
	id[6], id[7] = byte(partition>>8), byte(partition)
	id[8], id[9] = byte(sequence>>8), byte(sequence)
	return id
}

const schema = `DROP TABLE IF EXISTS orders;
CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int, total numeric, related sno[])`

// The vector from the README: text, bytes and fields.
const (
	vectorText  = "brpk4q72xwf2m63l"
	vectorHex   = "4e6f2160a0ff9a0a1033"
	vectorField = "2031-05-08 23:03:34.976 meta 255 partition 39434 sequence 4147 tick 0"
)

// standIn checks the stand-in's text codec against the README's vector (the server's side
// is checked per driver: it must print the bytes the Go side made as Go prints them).
func standIn() {
	id, err := sno.FromEncodedString(vectorText)
	if check("stand-in: FromEncodedString of the README vector", err) {
		same("stand-in: its bytes", hex.EncodeToString(id[:]), vectorHex)
		same("stand-in: String() gives the text back", id.String(), vectorText)
		same("stand-in: fields", goFields(id), vectorField)
	}
	var s sno.ID
	sizeTrap("stand-in: Scan of 16 text bytes as []byte", s.Scan([]byte(vectorText)))
	check("stand-in: Scan of the 16-character string", s.Scan(vectorText))
	same("stand-in: ... gives the ID", s.String(), vectorText)
	v, _ := id.Value()
	same("stand-in: Value() is the 10 bytes", fmt.Sprintf("%T %x", v, v), "[]uint8 "+vectorHex)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sno-drivers-go DSN")
		os.Exit(2)
	}
	dsn := os.Args[1]
	ctx := context.Background()
	t0 := time.Now()
	standIn()
	libPQ(dsn)
	readmePQ(dsn)
	pgxNative(ctx, dsn)
	readmePgx(ctx, dsn)
	pgxRegistered(ctx, dsn)
	pgxStdlib(dsn)
	fmt.Printf("(go drivers: %d ok, %d failed, %.1f s)\n", passed, failed, time.Since(t0).Seconds())
	if failed > 0 {
		os.Exit(1)
	}
}
