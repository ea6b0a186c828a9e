// Package sno is a STAND-IN for github.com/muyo/sno, written for sno's driver tests (the real
// library is not packaged for Debian and the test machines reach no Go module proxy). It is
// not the library: it has only what the driver tests need, with the library's names and its
// database/sql behaviour, so the recipes tested with it (tests/drivers/go/recipes.go and
// readme_blocks.go) compile unchanged against the real github.com/muyo/sno:
//
//   - ID is [10]byte; Value() gives the 10 bytes as []byte.
//   - Scan takes a []byte of 10 bytes (copied), a string of 16 characters (decoded), an
//     empty []byte or string or nil (the zero ID); any other length is an
//     *InvalidDataSizeError, any other type an *InvalidTypeError.
//   - String/MarshalText give the 16-character text form; FromBinaryBytes,
//     FromEncodedString and FromEncodedBytes build an ID from the 10 bytes or the text.
//
// The text form is 80 bits as 16 five-bit digits, most significant first, of the alphabet
// 23456789abcdefghijklmnopqrstuvwx. Like the library, decoding does not check the
// characters (the server does: it never sends anything else).
package sno

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

const (
	SizeBinary  = 10
	SizeEncoded = 16
	// Epoch is 2010-01-01 00:00:00 UTC in Unix seconds; TimeUnit is 4 ms in nanoseconds.
	Epoch    = 1262304000
	TimeUnit = 4e6
)

const alphabet = "23456789abcdefghijklmnopqrstuvwx"

var decodeMap = func() (m [256]byte) {
	for i := range m {
		m[i] = 0xff
	}
	for i := 0; i < len(alphabet); i++ {
		m[alphabet[i]] = byte(i)
	}
	return m
}()

// ID is the 10-byte binary form of a sno ID.
type ID [SizeBinary]byte

// Partition is the 2-byte partition of an ID.
type Partition [2]byte

// AsUint16 returns the partition as a number.
func (p Partition) AsUint16() uint16 { return uint16(p[0])<<8 | uint16(p[1]) }

// InvalidDataSizeError is returned for a value of the wrong length (the library's message).
type InvalidDataSizeError struct{ Size int }

func (e *InvalidDataSizeError) Error() string { return "sno: unrecognized data size" }

// InvalidTypeError is returned by Scan for a value of a type it does not take.
type InvalidTypeError struct{ Value interface{} }

func (e *InvalidTypeError) Error() string {
	return fmt.Sprintf("sno: unrecognized data type: %T", e.Value)
}

var errInvalidID = errors.New("sno: invalid ID")

func encode(id *ID) (dst [SizeEncoded]byte) {
	hi := uint64(id[0])<<32 | uint64(binary.BigEndian.Uint32(id[1:5]))  // first 40 bits
	lo := uint64(id[5])<<32 | uint64(binary.BigEndian.Uint32(id[6:10])) // last 40 bits
	for i := 7; i >= 0; i-- {
		dst[i] = alphabet[hi&31]
		dst[i+8] = alphabet[lo&31]
		hi >>= 5
		lo >>= 5
	}
	return dst
}

func decode(src []byte) (id ID) {
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<5 | uint64(decodeMap[src[i]]&31)
		lo = lo<<5 | uint64(decodeMap[src[i+8]]&31)
	}
	id[0] = byte(hi >> 32)
	binary.BigEndian.PutUint32(id[1:5], uint32(hi))
	id[5] = byte(lo >> 32)
	binary.BigEndian.PutUint32(id[6:10], uint32(lo))
	return id
}

// String returns the 16-character text form.
func (id ID) String() string { b := encode(&id); return string(b[:]) }

// Bytes returns the 10 bytes.
func (id ID) Bytes() []byte { return id[:] }

// MarshalText returns the 16-character text form.
func (id ID) MarshalText() ([]byte, error) { b := encode(&id); return b[:], nil }

// UnmarshalText decodes the 16-character text form.
func (id *ID) UnmarshalText(src []byte) error {
	if len(src) != SizeEncoded {
		return &InvalidDataSizeError{Size: len(src)}
	}
	*id = decode(src)
	return nil
}

// Time returns the start of the ID's 4 ms unit.
func (id ID) Time() time.Time {
	units := int64(binary.BigEndian.Uint64(id[:8]) >> 25)
	return time.Unix(units/250+Epoch, (units%250)*TimeUnit)
}

// Meta returns the metadata byte.
func (id ID) Meta() byte { return id[5] }

// Partition returns the partition.
func (id ID) Partition() Partition { return Partition{id[6], id[7]} }

// Sequence returns the sequence number.
func (id ID) Sequence() uint16 { return uint16(id[8])<<8 | uint16(id[9]) }

// IsZero says whether this is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// Value implements driver.Valuer: the 10 bytes as a []byte.
func (id ID) Value() (driver.Value, error) { return id[:], nil }

// Scan implements sql.Scanner as the library does (see the package comment).
func (id *ID) Scan(value interface{}) error {
	switch v := value.(type) {
	case []byte:
		switch len(v) {
		case SizeBinary:
			copy(id[:], v)
		case 0:
			*id = ID{}
		default:
			*id = ID{}
			return &InvalidDataSizeError{Size: len(v)}
		}
	case string:
		switch len(v) {
		case SizeEncoded:
			*id = decode([]byte(v))
		case 0:
			*id = ID{}
		default:
			*id = ID{}
			return &InvalidDataSizeError{Size: len(v)}
		}
	case nil:
		*id = ID{}
	default:
		return &InvalidTypeError{Value: value}
	}
	return nil
}

// FromBinaryBytes copies 10 bytes into an ID.
func FromBinaryBytes(src []byte) (ID, error) {
	if len(src) != SizeBinary {
		return ID{}, errInvalidID
	}
	var id ID
	copy(id[:], src)
	return id, nil
}

// FromEncodedString decodes the 16-character text form.
func FromEncodedString(src string) (ID, error) {
	if len(src) != SizeEncoded {
		return ID{}, errInvalidID
	}
	return decode([]byte(src)), nil
}

// FromEncodedBytes decodes the 16-character text form held in a byte slice.
func FromEncodedBytes(src []byte) (ID, error) {
	if len(src) != SizeEncoded {
		return ID{}, errInvalidID
	}
	return decode(src), nil
}
