package main

// The code blocks of RECIPES.md (for the README), statement for statement, each followed by
// its check. A change to a block there must be made here too.

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
	"github.com/lib/pq"
	"github.com/muyo/sno"
)

func readmePQ(dsn string) {
	db, err := sql.Open("postgres", dsn)
	if !check("README lib/pq: open", err) {
		return
	}
	defer db.Close()
	newID, textID := clientID(255, 0xa0ff, 100), clientID(255, 0xa0ff, 101).String()
	other := clientID(255, 0xa0ff, 102)
	if _, err := db.Exec("INSERT INTO orders (id) VALUES ($1)", other.String()); err != nil {
		bad("README lib/pq: setup", "%v", err)
		return
	}
	ids := []sno.ID{newID, other}

	// --- block
	var id sno.ID
	var customer int
	err = db.QueryRow("INSERT INTO orders (customer) VALUES (42) RETURNING id::text").Scan(&id)
	check("README lib/pq: RETURNING id::text", err)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES (sno($1), 7)", newID) // a sno.ID
	check("README lib/pq: VALUES (sno($1), 7) with a sno.ID", err)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES ($1, 7)", textID) // a string
	check("README lib/pq: VALUES ($1, 7) with a string", err)
	err = db.QueryRow("SELECT customer FROM orders WHERE id = sno($1)", id).Scan(&customer)
	if check("README lib/pq: WHERE id = sno($1)", err) {
		same("README lib/pq: ... customer", customer, 42)
	}
	_, err = db.Exec("UPDATE orders SET related = $1 WHERE id = sno($2)", pq.Array(snoBytes(ids)), id)
	check("README lib/pq: SET related = pq.Array(snoBytes(ids))", err)
	var raw [][]byte
	err = db.QueryRow("SELECT related::bytea[] FROM orders WHERE id = sno($1)", id).Scan(pq.Array(&raw))
	check("README lib/pq: related::bytea[] into pq.Array(&raw)", err)
	related, err := snoFromBytes(raw)
	if check("README lib/pq: snoFromBytes(raw)", err) {
		same("README lib/pq: ... the IDs", related, ids)
	}
	// --- end of block

	// --- block: binary_parameters=yes
	db2, err := sql.Open("postgres", dsn+" binary_parameters=yes")
	if !check("README lib/pq binary_parameters=yes: open", err) {
		return
	}
	defer db2.Close()
	newID = clientID(255, 0xa0ff, 103)
	_, err = db2.Exec("INSERT INTO orders (id, customer) VALUES ($1, 7)", newID)
	check("README lib/pq binary_parameters=yes: VALUES ($1, 7) with a sno.ID", err)
	err = db2.QueryRow("SELECT customer FROM orders WHERE id = $1", id).Scan(&customer)
	if check("README lib/pq binary_parameters=yes: WHERE id = $1 with a sno.ID", err) {
		same("README lib/pq binary_parameters=yes: ... customer", customer, 42)
	}
	// --- end of block
}

func readmePgx(ctx context.Context, dsn string) {
	conn, err := pgx.Connect(ctx, dsn)
	if !check("README pgx: connect", err) {
		return
	}
	defer conn.Close(ctx)
	newID := clientID(255, 0xa0ff, 110)
	other := clientID(255, 0xa0ff, 111)
	if _, err := conn.Exec(ctx, "INSERT INTO orders (id) VALUES ($1)", other); err != nil {
		bad("README pgx: setup", "%v", err)
		return
	}
	ids := []sno.ID{newID, other}

	// --- block
	var id sno.ID
	var customer int
	err = conn.QueryRow(ctx, "INSERT INTO orders (customer) VALUES (42) RETURNING id").Scan(&id)
	check("README pgx: RETURNING id", err)
	_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer) VALUES ($1, 7)", newID) // a sno.ID or a string
	check("README pgx: VALUES ($1, 7) with a sno.ID", err)
	err = conn.QueryRow(ctx, "SELECT customer FROM orders WHERE id = $1", id).Scan(&customer)
	if check("README pgx: WHERE id = $1", err) {
		same("README pgx: ... customer", customer, 42)
	}
	_, err = conn.Exec(ctx, "UPDATE orders SET related = $1 WHERE id = $2", snoBytes(ids), id)
	check("README pgx: SET related = snoBytes(ids)", err)
	var raw [][]byte
	err = conn.QueryRow(ctx, "SELECT related::bytea[] FROM orders WHERE id = $1", id).Scan(&raw)
	check("README pgx: related::bytea[] into [][]byte", err)
	related, err := snoFromBytes(raw)
	if check("README pgx: snoFromBytes(raw)", err) {
		same("README pgx: ... the IDs", related, ids)
	}
	// --- end of block

	// --- block: RegisterSno
	config, err := pgxpool.ParseConfig(dsn)
	if !check("README pgx RegisterSno: ParseConfig", err) {
		return
	}
	config.AfterConnect = RegisterSno
	pool, err := pgxpool.ConnectConfig(ctx, config)
	if !check("README pgx RegisterSno: ConnectConfig", err) {
		return
	}
	defer pool.Close()
	raw = nil
	err = pool.QueryRow(ctx, "SELECT related FROM orders WHERE id = $1", id).Scan(&raw) // no ::bytea[]
	if check("README pgx RegisterSno: related into [][]byte", err) {
		related, err = snoFromBytes(raw)
		if check("README pgx RegisterSno: snoFromBytes(raw)", err) {
			same("README pgx RegisterSno: ... the IDs", related, ids)
		}
	}
	// --- end of block
}
