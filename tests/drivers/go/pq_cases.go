package main

// lib/pq 1.10 (database/sql). lib/pq reads every column in text form (it has no binary
// results) and hands a column of an unknown type such as sno to Scan as a []byte of its
// text; it sends a []byte parameter as bytea hex only when the parameter's type is bytea,
// otherwise as raw bytes in text form. Hence the traps and recipes below.

import (
	"database/sql"

	"github.com/lib/pq"
	"github.com/muyo/sno"
)

func libPQ(dsn string) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		bad("lib/pq: open", "%v", err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		bad("lib/pq: create the table", "%v", err)
		return
	}
	scan := func(q string, args []interface{}, dest ...interface{}) error {
		return db.QueryRow(q, args...).Scan(dest...)
	}
	var partition int
	if err := db.QueryRow("SELECT sno_current_partition()").Scan(&partition); err != nil {
		bad("lib/pq: sno_current_partition()", "%v", err)
		return
	}

	// --- Insert with the DEFAULT, read the ID back.
	var id sno.ID
	err = db.QueryRow("INSERT INTO orders (customer) VALUES (42) RETURNING id").Scan(&id)
	sizeTrap("lib/pq: RETURNING id scanned into sno.ID fails (lib/pq hands Scan the 16 text bytes as []byte)", err)

	// RECIPE: read id::text (or id::bytea) instead of id.
	err = db.QueryRow("INSERT INTO orders (customer) VALUES (42) RETURNING id::text").Scan(&id)
	if check("lib/pq: DEFAULT sno_generate(1), RETURNING id::text scanned into sno.ID", err) {
		same("lib/pq: ... the generated ID has meta 1 and the server's partition",
			[]int{int(id.Meta()), int(id.Partition().AsUint16())}, []int{1, partition})
		checkFields("lib/pq: generated ID read through id::text", id, scan)
	}
	var id2 sno.ID
	err = db.QueryRow("SELECT id::bytea FROM orders WHERE id = $1", id.String()).Scan(&id2)
	if check("lib/pq: SELECT id::bytea scanned into sno.ID (the 10 bytes)", err) {
		same("lib/pq: ... is the same ID as id::text gave", id2, id)
	}

	// --- A client-made ID as text: works out of the box.
	idText := clientID(7, 0x0102, 1)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES ($1, 7)", idText.String())
	if check("lib/pq: insert a client-made ID as text (id.String()) out of the box", err) {
		checkFields("lib/pq: ID inserted as text", idText, scan)
	}
	var s string
	err = db.QueryRow("SELECT id FROM orders WHERE id = $1", idText.String()).Scan(&s)
	if check("lib/pq: SELECT id scanned into a string, WHERE id = $1 with id.String(), out of the box", err) {
		same("lib/pq: ... the server prints the Go ID's text", s, idText.String())
	}

	// --- A client-made ID as the 10 raw bytes (passing the sno.ID itself).
	idRaw := clientID(255, 0xa0ff, 2)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES ($1, 8)", idRaw)
	trap("lib/pq: insert sno.ID as $1 fails (its 10 bytes go as text)", err,
		`invalid byte sequence for encoding "UTF8"`)

	// RECIPE: sno($1) makes the parameter bytea, which lib/pq sends in bytea's hex form.
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES (sno($1), 8)", idRaw)
	if check("lib/pq: insert sno.ID as sno($1)", err) {
		checkFields("lib/pq: ID inserted through sno($1)", idRaw, scan)
	}
	idRaw2 := clientID(255, 0xa0ff, 3)
	_, err = db.Exec("INSERT INTO orders (id, customer) VALUES ($1::bytea, 8)", idRaw2)
	if check("lib/pq: insert sno.ID as $1::bytea (the assignment cast bytea -> sno)", err) {
		checkFields("lib/pq: ID inserted through $1::bytea", idRaw2, scan)
	}

	// --- The ID as a WHERE parameter.
	var customer int
	err = db.QueryRow("SELECT customer FROM orders WHERE id = $1", idRaw).Scan(&customer)
	trap("lib/pq: WHERE id = $1 with sno.ID fails (its 10 bytes go as text)", err,
		`invalid byte sequence for encoding "UTF8"`)
	err = db.QueryRow("SELECT customer FROM orders WHERE id = $1::bytea", idRaw).Scan(&customer)
	trap("lib/pq: WHERE id = $1::bytea fails (no sno = bytea operator)", err,
		"operator does not exist: sno = bytea")
	// RECIPE: WHERE id = sno($1).
	customer = 0
	err = db.QueryRow("SELECT customer FROM orders WHERE id = sno($1)", idRaw).Scan(&customer)
	if check("lib/pq: WHERE id = sno($1) with sno.ID", err) {
		same("lib/pq: ... finds the row", customer, 8)
	}
	customer = 0
	err = db.QueryRow("SELECT customer FROM orders WHERE id = $1", idText.String()).Scan(&customer)
	if check("lib/pq: WHERE id = $1 with id.String() out of the box", err) {
		same("lib/pq: ... finds the row", customer, 7)
	}

	// RECIPE: the DSN option binary_parameters=yes sends every []byte parameter in binary,
	// which the server takes as the 10 bytes of a sno: $1 works as it is.
	dbBin, err := sql.Open("postgres", dsn+" binary_parameters=yes")
	if err == nil {
		defer dbBin.Close()
		idBin := clientID(255, 0xa0ff, 4)
		_, err = dbBin.Exec("INSERT INTO orders (id, customer) VALUES ($1, 9)", idBin)
		if check("lib/pq binary_parameters=yes: insert sno.ID as $1", err) {
			checkFields("lib/pq binary_parameters=yes: ID inserted as $1", idBin, scan)
		}
		customer = 0
		err = dbBin.QueryRow("SELECT customer FROM orders WHERE id = $1", idBin).Scan(&customer)
		if check("lib/pq binary_parameters=yes: WHERE id = $1 with sno.ID", err) {
			same("lib/pq binary_parameters=yes: ... finds the row", customer, 9)
		}
		_, err = dbBin.Exec("INSERT INTO orders (id, customer) VALUES ($1, 9)", clientID(1, 0, 5).String())
		check("lib/pq binary_parameters=yes: insert an ID as text still works", err)
		err = dbBin.QueryRow("SELECT id FROM orders WHERE id = $1", idBin).Scan(&id2)
		sizeTrap("lib/pq binary_parameters=yes: SELECT id into sno.ID still fails (results stay text)", err)
	} else {
		bad("lib/pq binary_parameters=yes: open", "%v", err)
	}

	// --- sno[] parameters.
	tags := []sno.ID{idText, idRaw}
	tagsText := "{" + idText.String() + "," + idRaw.String() + "}"
	_, err = db.Exec("UPDATE orders SET related = $1 WHERE id = $2", pq.Array(tags), idText.String())
	trap("lib/pq: sno[] parameter as pq.Array([]sno.ID) fails (elements go as raw bytes)", err,
		`invalid byte sequence for encoding "UTF8"`)
	// RECIPE: pq.Array of the IDs' text ([]string) or of their bytes ([][]byte, sent as
	// bytea hex text, which sno's input takes).
	_, err = db.Exec("UPDATE orders SET related = $1 WHERE id = $2", pq.Array(snoStrings(tags)), idText.String())
	if check("lib/pq: sno[] parameter as pq.Array(snoStrings(ids))", err) {
		err = db.QueryRow("SELECT related::text FROM orders WHERE id = $1", idText.String()).Scan(&s)
		same("lib/pq: ... stored as sent", s, tagsText)
	}
	_, err = db.Exec("UPDATE orders SET related = $1 WHERE id = $2", pq.Array(snoBytes(tags)), idRaw.String())
	if check("lib/pq: sno[] parameter as pq.Array(snoBytes(ids)) ({\"\\\\x...\"} text)", err) {
		err = db.QueryRow("SELECT related::text FROM orders WHERE id = $1", idRaw.String()).Scan(&s)
		same("lib/pq: ... stored as sent", s, tagsText)
	}
	var n int
	err = db.QueryRow("SELECT count(*) FROM orders WHERE id = ANY($1)", pq.Array(snoStrings(tags))).Scan(&n)
	if check("lib/pq: WHERE id = ANY($1) with pq.Array(snoStrings(ids))", err) {
		same("lib/pq: ... finds both rows", n, 2)
	}

	// --- sno[] columns.
	var got []sno.ID
	err = db.QueryRow("SELECT related FROM orders WHERE id = $1", idText.String()).Scan(pq.Array(&got))
	sizeTrap("lib/pq: sno[] column scanned into pq.Array(&[]sno.ID) fails (elements as 16 text bytes)", err)
	// RECIPE: scan into pq.Array(&[]string), then sno.FromEncodedString each.
	var strs []string
	err = db.QueryRow("SELECT related FROM orders WHERE id = $1", idText.String()).Scan(pq.Array(&strs))
	if check("lib/pq: sno[] column scanned into pq.Array(&[]string)", err) {
		got, err = snoFromStrings(strs)
		if check("lib/pq: ... snoFromStrings", err) {
			same("lib/pq: ... gives the IDs", got, tags)
		}
	}
	var raw [][]byte
	err = db.QueryRow("SELECT related::bytea[] FROM orders WHERE id = $1", idText.String()).Scan(pq.Array(&raw))
	if check("lib/pq: related::bytea[] scanned into pq.Array(&[][]byte)", err) {
		got, err = snoFromBytes(raw)
		if check("lib/pq: ... snoFromBytes", err) {
			same("lib/pq: ... gives the IDs", got, tags)
		}
	}
}
