package main

// pgx v4 (github.com/jackc/pgx/v4 4.15, pgtype 1.10). Without registration, sno is a type pgx
// does not know: it reads it in text form and hands sql.Scanner destinations the text as a
// string (which muyo/sno's Scan decodes), and sends a []byte parameter (what sno.ID's Value
// gives) in bytea's hex text form, \x and 20 hex digits, which sno's input takes. sno[] is
// unknown too, and pgx cannot put []sno.ID into it or take it out.

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
	_ "github.com/jackc/pgx/v4/stdlib"
	"github.com/muyo/sno"
)

// formatOf runs a query and returns the wire format of its first result column (0 text,
// 1 binary), to show which recipes keep binary.
func formatOf(ctx context.Context, q func(ctx context.Context, sql string, args ...interface{}) (pgx.Rows, error), sql string, args ...interface{}) (int16, error) {
	rows, err := q(ctx, sql, args...)
	if err != nil {
		return -1, err
	}
	defer rows.Close()
	fd := rows.FieldDescriptions()
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return -1, err
	}
	if len(fd) == 0 {
		return -1, fmt.Errorf("no columns")
	}
	return fd[0].Format, nil
}

func pgxNative(ctx context.Context, dsn string) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		bad("pgx: connect", "%v", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, schema); err != nil {
		bad("pgx: create the table", "%v", err)
		return
	}
	scan := func(q string, args []interface{}, dest ...interface{}) error {
		return conn.QueryRow(ctx, q, args...).Scan(dest...)
	}
	var partition int
	if err := conn.QueryRow(ctx, "SELECT sno_current_partition()").Scan(&partition); err != nil {
		bad("pgx: sno_current_partition()", "%v", err)
		return
	}
	serverCodec(ctx, conn)

	// --- Insert with the DEFAULT, read the ID back: out of the box (text form, Scan(string)).
	var id sno.ID
	err = conn.QueryRow(ctx, "INSERT INTO orders (customer) VALUES (42) RETURNING id").Scan(&id)
	if check("pgx: DEFAULT sno_generate(1), RETURNING id scanned into sno.ID, out of the box (text)", err) {
		same("pgx: ... the generated ID has meta 1 and the server's partition",
			[]int{int(id.Meta()), int(id.Partition().AsUint16())}, []int{1, partition})
		checkFields("pgx: generated ID", id, scan)
	}
	f, err := formatOf(ctx, conn.Query, "SELECT id FROM orders")
	if check("pgx: unregistered, a sno column comes in text form", err) {
		same("pgx: ... result format code", f, 0)
	}
	var s string
	err = conn.QueryRow(ctx, "SELECT id FROM orders WHERE id = $1", id).Scan(&s)
	if check("pgx: SELECT id scanned into a string out of the box", err) {
		same("pgx: ... the server prints the Go ID's text", s, id.String())
	}

	// --- A client-made ID as text and as the 10 raw bytes: both out of the box.
	idText := clientID(7, 0x0102, 1)
	_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 7)", idText.String())
	if check("pgx: insert a client-made ID as text (id.String()) out of the box", err) {
		checkFields("pgx: ID inserted as text", idText, scan)
	}
	idRaw := clientID(255, 0xa0ff, 2)
	_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 8)", idRaw)
	if check("pgx: insert sno.ID as $1 out of the box (sent as bytea hex text \\x...)", err) {
		checkFields("pgx: ID inserted as sno.ID", idRaw, scan)
	}
	idSlice := clientID(255, 0xa0ff, 3)
	_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 10)", idSlice.Bytes())
	if check("pgx: insert id.Bytes() ([]byte) as $1 out of the box", err) {
		checkFields("pgx: ID inserted as []byte", idSlice, scan)
	}

	// --- The ID as a WHERE parameter: out of the box.
	var customer int
	err = conn.QueryRow(ctx, "SELECT customer FROM orders WHERE id = $1", idRaw).Scan(&customer)
	if check("pgx: WHERE id = $1 with sno.ID out of the box", err) {
		same("pgx: ... finds the row", customer, 8)
	}
	customer = 0
	err = conn.QueryRow(ctx, "SELECT customer FROM orders WHERE id = $1", idText.String()).Scan(&customer)
	if check("pgx: WHERE id = $1 with id.String() out of the box", err) {
		same("pgx: ... finds the row", customer, 7)
	}
	err = conn.QueryRow(ctx, "SELECT customer FROM orders WHERE id = $1::bytea", idRaw).Scan(&customer)
	trap("pgx: WHERE id = $1::bytea fails (no sno = bytea operator)", err, "operator does not exist: sno = bytea")

	// --- sno[] parameters.
	tags := []sno.ID{idText, idRaw}
	tagsText := "{" + idText.String() + "," + idRaw.String() + "}"
	_, err = conn.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", tags, idText)
	trap("pgx: sno[] parameter as []sno.ID fails", err, "Cannot encode []sno.ID into oid")
	// RECIPE: send [][]byte (snoBytes) or []string (snoStrings).
	_, err = conn.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", snoBytes(tags), idText)
	if check("pgx: sno[] parameter as snoBytes(ids) ([][]byte)", err) {
		err = conn.QueryRow(ctx, "SELECT related::text FROM orders WHERE id = $1", idText).Scan(&s)
		same("pgx: ... stored as sent", s, tagsText)
	}
	_, err = conn.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", snoStrings(tags), idRaw)
	if check("pgx: sno[] parameter as snoStrings(ids) ([]string)", err) {
		err = conn.QueryRow(ctx, "SELECT related::text FROM orders WHERE id = $1", idRaw).Scan(&s)
		same("pgx: ... stored as sent", s, tagsText)
	}
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = ANY($1)", snoBytes(tags)).Scan(&n)
	if check("pgx: WHERE id = ANY($1) with snoBytes(ids)", err) {
		same("pgx: ... finds both rows", n, 2)
	}

	// --- sno[] columns.
	var got []sno.ID
	err = conn.QueryRow(ctx, "SELECT related FROM orders WHERE id = $1", idText).Scan(&got)
	trap("pgx: sno[] column scanned into []sno.ID fails", err, "cannot be scanned into *[]sno.ID")
	var strs []string
	err = conn.QueryRow(ctx, "SELECT related FROM orders WHERE id = $1", idText).Scan(&strs)
	trap("pgx: sno[] column scanned into []string fails too", err, "cannot be scanned into *[]string")
	// RECIPE: read related::bytea[] (binary) into [][]byte, then snoFromBytes.
	var raw [][]byte
	err = conn.QueryRow(ctx, "SELECT related::bytea[] FROM orders WHERE id = $1", idText).Scan(&raw)
	if check("pgx: related::bytea[] scanned into [][]byte", err) {
		got, err = snoFromBytes(raw)
		if check("pgx: ... snoFromBytes", err) {
			same("pgx: ... gives the IDs", got, tags)
		}
	}
	f, err = formatOf(ctx, conn.Query, "SELECT related::bytea[] FROM orders WHERE related IS NOT NULL")
	if check("pgx: related::bytea[] comes in binary", err) {
		same("pgx: ... result format code", f, 1)
	}
	err = conn.QueryRow(ctx, "SELECT related::text[] FROM orders WHERE id = $1", idText).Scan(&strs)
	if check("pgx: related::text[] scanned into []string", err) {
		got, err = snoFromStrings(strs)
		if check("pgx: ... snoFromStrings", err) {
			same("pgx: ... gives the IDs", got, tags)
		}
	}

	// --- The simple protocol (PreferSimpleProtocol, as behind pgbouncer): out of the box too.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		bad("pgx simple protocol: config", "%v", err)
		return
	}
	cfg.PreferSimpleProtocol = true
	sconn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		bad("pgx simple protocol: connect", "%v", err)
		return
	}
	defer sconn.Close(ctx)
	idSimple := clientID(255, 0xa0ff, 4)
	_, err = sconn.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 11)", idSimple)
	if check("pgx simple protocol: insert sno.ID as $1 (a '\\x...' literal)", err) {
		checkFields("pgx simple protocol: ID inserted as sno.ID", idSimple, scan)
	}
	var back sno.ID
	err = sconn.QueryRow(ctx, "SELECT id FROM orders WHERE id = $1", idSimple).Scan(&back)
	if check("pgx simple protocol: WHERE id = $1 with sno.ID, scanned into sno.ID", err) {
		same("pgx simple protocol: ... the same ID", back, idSimple)
	}
}

// serverCodec checks the stand-in's text form against the server's, both ways, on random IDs
// and the extremes (sent as bytea[] and text[], which pgx knows).
func serverCodec(ctx context.Context, conn *pgx.Conn) {
	rng := rand.New(rand.NewSource(9))
	ids := []sno.ID{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for len(ids) < 1000 {
		var id sno.ID
		rng.Read(id[:])
		ids = append(ids, id)
	}
	var texts []string
	err := conn.QueryRow(ctx, "SELECT array_agg(sno(b)::text ORDER BY n) FROM unnest($1::bytea[]) WITH ORDINALITY u(b, n)",
		snoBytes(ids)).Scan(&texts)
	if check("pgx: the server's text of 1000 IDs made in Go", err) {
		same("pgx: ... equals the Go ID's String()", texts, snoStrings(ids))
	}
	var raw [][]byte
	err = conn.QueryRow(ctx, "SELECT array_agg(s::sno::bytea ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY u(s, n)",
		snoStrings(ids)).Scan(&raw)
	if check("pgx: the server's bytes of the Go IDs' text", err) {
		same("pgx: ... equal the Go IDs", raw, snoBytes(ids))
	}
}

// pgxRegistered runs the RegisterSno recipe through pgxpool's AfterConnect.
func pgxRegistered(ctx context.Context, dsn string) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		bad("pgx+RegisterSno: pool config", "%v", err)
		return
	}
	cfg.MaxConns = 2
	cfg.AfterConnect = RegisterSno // RECIPE
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		bad("pgx+RegisterSno: pool", "%v", err)
		return
	}
	defer pool.Close()
	scan := func(q string, args []interface{}, dest ...interface{}) error {
		return pool.QueryRow(ctx, q, args...).Scan(dest...)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE orders"); err != nil {
		bad("pgx+RegisterSno: truncate", "%v", err)
		return
	}

	var id sno.ID
	err = pool.QueryRow(ctx, "INSERT INTO orders (customer) VALUES (42) RETURNING id").Scan(&id)
	if check("pgx+RegisterSno: DEFAULT sno_generate(1), RETURNING id scanned into sno.ID", err) {
		same("pgx+RegisterSno: ... meta 1", id.Meta(), 1)
		checkFields("pgx+RegisterSno: generated ID", id, scan)
	}
	f, err := formatOf(ctx, pool.Query, "SELECT id FROM orders")
	if check("pgx+RegisterSno: a sno column comes in binary", err) {
		same("pgx+RegisterSno: ... result format code", f, 1)
	}
	idRaw := clientID(255, 0xa0ff, 2)
	_, err = pool.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 8)", idRaw)
	if check("pgx+RegisterSno: insert sno.ID as $1 (binary)", err) {
		checkFields("pgx+RegisterSno: ID inserted as sno.ID", idRaw, scan)
	}
	err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		same("pgx+RegisterSno: a sno parameter goes in binary (format code)",
			c.Conn().ConnInfo().ParamFormatCodeForOID(mustOID(ctx, c.Conn(), "sno")), 1)
		return nil
	})
	check("pgx+RegisterSno: acquire", err)
	idText := clientID(7, 0x0102, 1)
	_, err = pool.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 7)", idText.String())
	if check("pgx+RegisterSno: insert an ID as text (id.String()) still works", err) {
		checkFields("pgx+RegisterSno: ID inserted as text", idText, scan)
	}
	var customer int
	err = pool.QueryRow(ctx, "SELECT customer FROM orders WHERE id = $1", idRaw).Scan(&customer)
	if check("pgx+RegisterSno: WHERE id = $1 with sno.ID", err) {
		same("pgx+RegisterSno: ... finds the row", customer, 8)
	}
	var s string
	err = pool.QueryRow(ctx, "SELECT id FROM orders WHERE id = $1", idRaw).Scan(&s)
	trap("pgx+RegisterSno: SELECT id into a string fails (binary bytes, no text)", err, "unable to assign to *string")
	err = pool.QueryRow(ctx, "SELECT id::text FROM orders WHERE id = $1", idRaw).Scan(&s)
	if check("pgx+RegisterSno: SELECT id::text into a string", err) {
		same("pgx+RegisterSno: ... the Go ID's text", s, idRaw.String())
	}

	// sno[]: [][]byte both ways in binary; []sno.ID still needs the helpers.
	tags := []sno.ID{idText, idRaw}
	_, err = pool.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", tags, idText)
	trap("pgx+RegisterSno: sno[] parameter as []sno.ID still fails", err, "cannot convert", "to Bytea")
	_, err = pool.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", snoBytes(tags), idText)
	if check("pgx+RegisterSno: sno[] parameter as snoBytes(ids) (binary)", err) {
		err = pool.QueryRow(ctx, "SELECT related::text FROM orders WHERE id = $1", idText).Scan(&s)
		same("pgx+RegisterSno: ... stored as sent", s, "{"+idText.String()+","+idRaw.String()+"}")
	}
	var got []sno.ID
	err = pool.QueryRow(ctx, "SELECT related FROM orders WHERE id = $1", idText).Scan(&got)
	trap("pgx+RegisterSno: sno[] column scanned into []sno.ID still fails", err, "unable to assign to *[10]uint8")
	var raw [][]byte
	err = pool.QueryRow(ctx, "SELECT related FROM orders WHERE id = $1", idText).Scan(&raw)
	if check("pgx+RegisterSno: sno[] column scanned into [][]byte", err) {
		got, err = snoFromBytes(raw)
		if check("pgx+RegisterSno: ... snoFromBytes", err) {
			same("pgx+RegisterSno: ... gives the IDs", got, tags)
		}
	}
	f, err = formatOf(ctx, pool.Query, "SELECT related FROM orders WHERE related IS NOT NULL")
	if check("pgx+RegisterSno: a sno[] column comes in binary", err) {
		same("pgx+RegisterSno: ... result format code", f, 1)
	}
	var n int
	err = pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = ANY($1)", snoBytes(tags)).Scan(&n)
	if check("pgx+RegisterSno: WHERE id = ANY($1) with snoBytes(ids)", err) {
		same("pgx+RegisterSno: ... finds both rows", n, 2)
	}

	// Not with the simple protocol: its results are text, and pgtype.GenericBinary has no
	// text decoder: pgx v4 panics (a nil pointer) in Scan. On a connection of its own: the
	// panic leaves it busy, so it is dropped rather than closed or given back to a pool.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		bad("pgx+RegisterSno: connect", "%v", err)
		return
	}
	defer conn.PgConn().Conn().Close()
	if !check("pgx+RegisterSno: RegisterSno on a pgx.Conn", RegisterSno(ctx, conn)) {
		return
	}
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return conn.QueryRow(ctx, "SELECT id FROM orders WHERE id = $1", pgx.QuerySimpleProtocol(true), idRaw.String()).Scan(&id)
	}()
	trap("pgx+RegisterSno: a sno column read through the simple protocol panics", err, "panic", "nil pointer")
}

func mustOID(ctx context.Context, conn *pgx.Conn, name string) uint32 {
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT $1::regtype::oid", name).Scan(&oid); err != nil {
		bad("pgx: OID of "+name, "%v", err)
	}
	return oid
}

// pgxStdlib: pgx through database/sql (github.com/jackc/pgx/v4/stdlib, driver "pgx").
func pgxStdlib(dsn string) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		bad("pgx stdlib: open", "%v", err)
		return
	}
	defer db.Close()
	scan := func(q string, args []interface{}, dest ...interface{}) error {
		return db.QueryRow(q, args...).Scan(dest...)
	}
	var id sno.ID
	err = db.QueryRow("INSERT INTO orders (customer) VALUES (42) RETURNING id").Scan(&id)
	if check("pgx stdlib: DEFAULT sno_generate(1), RETURNING id scanned into sno.ID, out of the box", err) {
		same("pgx stdlib: ... meta 1", id.Meta(), 1)
		checkFields("pgx stdlib: generated ID", id, scan)
	}
	idRaw := clientID(255, 0xa0ff, 9)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES ($1, 12)", idRaw)
	if check("pgx stdlib: insert sno.ID as $1 out of the box", err) {
		checkFields("pgx stdlib: ID inserted as sno.ID", idRaw, scan)
	}
	var back sno.ID
	err = db.QueryRow("SELECT id FROM orders WHERE id = $1", idRaw).Scan(&back)
	if check("pgx stdlib: WHERE id = $1 with sno.ID, scanned into sno.ID, out of the box", err) {
		same("pgx stdlib: ... the same ID", back, idRaw)
	}
}
