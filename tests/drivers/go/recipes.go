package main

// The recipes: the code RECIPES.md proposes for the README, as the tests run it. Each one is
// between "recipe:begin NAME" and "recipe:end" and compiles unchanged against the real
// github.com/muyo/sno (the tests build it against the stand-in in standin/, which has the
// library's names and its Value/Scan behaviour).
//
// The SQL-only recipes (id::text in the select list, sno($1) for a parameter, the lib/pq DSN
// option binary_parameters=yes, ids::bytea[] for arrays) are in the test cases themselves,
// each marked "RECIPE".

import (
	"context"

	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
	"github.com/muyo/sno"
)

// recipe:begin sno-array-bytes (lib/pq and pgx: sno[] as [][]byte; in the README)

// snoBytes turns IDs into a [][]byte, which both drivers can send as a sno[] parameter.
func snoBytes(ids []sno.ID) [][]byte {
	b := make([][]byte, len(ids))
	for i := range ids {
		b[i] = ids[i].Bytes()
	}
	return b
}

// snoFromBytes turns a sno[] read as bytea[] into IDs.
func snoFromBytes(b [][]byte) ([]sno.ID, error) {
	ids := make([]sno.ID, len(b))
	for i := range b {
		var err error
		if ids[i], err = sno.FromBinaryBytes(b[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// recipe:end

// recipe:begin sno-array-strings (the same with the text form; tested, not in the README)

func snoStrings(ids []sno.ID) []string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return s
}

func snoFromStrings(s []string) ([]sno.ID, error) {
	ids := make([]sno.ID, len(s))
	for i := range s {
		var err error
		if ids[i], err = sno.FromEncodedString(s[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// recipe:end

// recipe:begin pgx-register-sno (pgx v4: sno and sno[] in binary)

// RegisterSno makes a pgx v4 connection send and read sno in binary (the 10 bytes) and sno[]
// as [][]byte. Call it once per connection; with pgxpool, set
// config.AfterConnect = RegisterSno.
func RegisterSno(ctx context.Context, conn *pgx.Conn) error {
	var snoOID, arrayOID uint32
	err := conn.QueryRow(ctx, "SELECT 'sno'::regtype::oid, 'sno[]'::regtype::oid").Scan(&snoOID, &arrayOID)
	if err != nil {
		return err
	}
	ci := conn.ConnInfo()
	ci.RegisterDataType(pgtype.DataType{Value: &pgtype.GenericBinary{}, Name: "sno", OID: snoOID})
	ci.RegisterDataType(pgtype.DataType{Value: &pgtype.ByteaArray{}, Name: "_sno", OID: arrayOID})
	return nil
}

// recipe:end
