'use strict'
// node-postgres (npm `pg`, the version pinned in package.json) against a real PostgreSQL server
// with the sno extension, run by tests/client/drivers_node.sh with node's own test runner:
//
//   PGHOST=/socket/dir PGPORT=5432 PGUSER=postgres PGDATABASE=db node --test sno.test.js
//
// (the database must have CREATE EXTENSION sno). Each test is one case of issue 9: what works
// out of the box, the recipe where something does not (between `RECIPE` and `END RECIPE`, the
// text RECIPES.md proposes for the README), and each trap asserted to behave as documented, so
// that a driver release that changes it fails here and the README gets updated.
//
// The IDs are checked against the server's own view of them: the test decodes the 16-character
// text itself (the alphabet and layout of the README) and compares the fields with sno_time,
// sno_meta, sno_partition, sno_sequence and sno_tick, and the bytes with id::bytea.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const pg = require('pg')

for (const v of ['PGHOST', 'PGDATABASE']) {
  if (!process.env[v]) {
    throw new Error(`${v} is not set: run tests/client/drivers_node.sh, or set PGHOST, PGPORT, ` +
      'PGUSER and PGDATABASE to a database where CREATE EXTENSION sno was run')
  }
}

// --- sno in JavaScript, for the checks (not a recipe) -------------------------------------------

const ALPHABET = '23456789abcdefghijklmnopqrstuvwx'
const EPOCH_MS = Date.UTC(2010, 0, 1)

// 16 characters -> the 10 bytes (5 bits per character, big-endian).
function decode (text) {
  assert.match(text, /^[2-9a-x]{16}$/, `sno text ${JSON.stringify(text)}`)
  let n = 0n
  for (const ch of text) n = (n << 5n) | BigInt(ALPHABET.indexOf(ch))
  return Buffer.from(n.toString(16).padStart(20, '0'), 'hex')
}

// The 10 bytes -> 16 characters.
function encode (bytes) {
  assert.equal(bytes.length, 10)
  let n = BigInt('0x' + Buffer.from(bytes).toString('hex'))
  let s = ''
  for (let i = 0; i < 16; i++, n >>= 5n) s = ALPHABET[Number(n & 31n)] + s
  return s
}

// The fields, as the SQL functions return them (time as milliseconds since 1970).
function fields (bytes) {
  const t = bytes.readUIntBE(0, 5)
  return {
    time: EPOCH_MS + Math.floor(t / 2) * 4,
    tick: t % 2,
    meta: bytes[5],
    partition: bytes.readUInt16BE(6),
    sequence: bytes.readUInt16BE(8)
  }
}

// A client-made ID: now, floored to 4 ms, with these fields.
function make (meta, partition, sequence) {
  const b = Buffer.alloc(10)
  b.writeUIntBE(Math.floor((Date.now() - EPOCH_MS) / 4) * 2, 0, 5)
  b[5] = meta
  b.writeUInt16BE(partition, 6)
  b.writeUInt16BE(sequence, 8)
  return b
}

// The README's example: 'brpk4q72xwf2m63l' is 4e6f2160a0ff9a0a1033 (bytes >= 0x80 included,
// which is what makes the binary-mode trap visible).
const GO_TEXT = 'brpk4q72xwf2m63l'
const GO_BYTES = Buffer.from('4e6f2160a0ff9a0a1033', 'hex')

let client

// What the server says of the ID with this text, compared with what the client decodes.
async function assertServerAgrees (text, want) {
  const { rows: [r] } = await client.query(
    `SELECT id::bytea AS bytes, sno_time(id) AS time, sno_meta(id) AS meta,
            sno_partition(id) AS partition, sno_sequence(id) AS sequence, sno_tick(id) AS tick
     FROM (SELECT $1::text::sno AS id) s`, [text])
  const bytes = decode(text)
  assert.deepEqual(r.bytes, bytes, 'id::bytea is the decoded text')
  const f = fields(bytes)
  assert.deepEqual(
    { time: r.time.getTime(), tick: r.tick, meta: r.meta, partition: r.partition, sequence: r.sequence },
    f, 'sno_time/sno_tick/sno_meta/sno_partition/sno_sequence')
  if (want) assert.deepEqual(f, { ...f, ...want })
}

before(async () => {
  client = new pg.Client() // PGHOST (the socket directory), PGPORT, PGUSER, PGDATABASE
  await client.connect()
  await client.query(`DROP TABLE IF EXISTS node_orders;
    CREATE TABLE node_orders (id sno PRIMARY KEY DEFAULT sno_generate(1), note text, tags sno[])`)
})

after(async () => {
  if (client) await client.end()
})

test('the test\'s own encoder agrees with the README example', () => {
  assert.equal(encode(GO_BYTES), GO_TEXT)
  assert.deepEqual(decode(GO_TEXT), GO_BYTES)
})

test('DEFAULT sno_generate(1): RETURNING id is the 16-character text (out of the box)', async () => {
  // RECIPE node: default
  const { rows: [{ id }] } = await client.query(
    'INSERT INTO node_orders (note) VALUES ($1) RETURNING id', ['default'])
  // id is a string such as '9q8xsxm42782a222'
  // END RECIPE
  assert.equal(typeof id, 'string')
  await assertServerAgrees(id, { meta: 1 })
  const { rows } = await client.query('SELECT id FROM node_orders WHERE note = $1', ['default'])
  assert.deepEqual(rows, [{ id }])
})

test('client-made ID as a text parameter (out of the box)', async () => {
  const text = encode(make(7, 4242, 1))
  // RECIPE node: text parameter
  await client.query('INSERT INTO node_orders (id, note) VALUES ($1, $2)', [text, 'text'])
  // END RECIPE
  const { rows } = await client.query('SELECT id FROM node_orders WHERE note = $1', ['text'])
  assert.deepEqual(rows, [{ id: text }])
  await assertServerAgrees(text, { meta: 7, partition: 4242, sequence: 1 })
})

test('client-made ID as a Buffer of the 10 raw bytes (out of the box: sent in binary format)', async () => {
  const bytes = make(7, 4242, 2)
  // RECIPE node: raw bytes parameter
  await client.query('INSERT INTO node_orders (id, note) VALUES ($1, $2)', [bytes, 'bytes'])
  // END RECIPE
  const { rows } = await client.query('SELECT id, id::bytea AS raw FROM node_orders WHERE note = $1', ['bytes'])
  assert.deepEqual(rows, [{ id: encode(bytes), raw: bytes }])
  await assertServerAgrees(encode(bytes), { meta: 7, partition: 4242, sequence: 2 })
  // A Uint8Array goes the same way.
  const { rows: [u] } = await client.query('SELECT $1::sno AS id', [new Uint8Array(GO_BYTES)])
  assert.equal(u.id, GO_TEXT)
  // node-postgres sends a Buffer parameter in binary format (sno_recv), not as '\x...' text:
  // the wrong length is the binary input's error (22P03), not the text input's (22P02).
  await assert.rejects(client.query('SELECT $1::sno', [Buffer.alloc(11)]),
    { code: '22P03', message: 'invalid binary length for type sno: 11 bytes' })
})

test('the bytea hex text form of the 10 bytes is accepted as a text parameter (out of the box)', async () => {
  // What pgx sends for a []byte, and node-postgres for a Buffer inside an array (next tests).
  for (const text of ['\\x' + GO_BYTES.toString('hex'), '\\x' + GO_BYTES.toString('hex').toUpperCase()]) {
    const { rows: [r] } = await client.query('SELECT $1::sno AS id', [text])
    assert.equal(r.id, GO_TEXT)
  }
  await assert.rejects(client.query('SELECT $1::sno', ['\\x' + GO_BYTES.toString('hex') + '00']),
    { code: '22P02' })
  await assert.rejects(client.query('SELECT $1::sno', ['brpk4q72xwf2m63y']), { code: '22P02' })
})

test('reading: the text as a string, the 10 bytes with id::bytea (out of the box)', async () => {
  // RECIPE node: read
  const { rows: [r] } = await client.query(
    'SELECT $1::sno AS id, $1::sno::bytea AS raw', [GO_TEXT])
  // r.id: 'brpk4q72xwf2m63l' (string), r.raw: <Buffer 4e 6f 21 60 a0 ff 9a 0a 10 33>
  // END RECIPE
  assert.deepEqual(r, { id: GO_TEXT, raw: GO_BYTES })
})

test('TRAP: binary mode (binary: true) corrupts sno and bytea results; text columns survive', async () => {
  // node-postgres decodes every result field as UTF-8 text, also in binary mode (brianc/node-postgres
  // issue 3495), so bytes >= 0x80 become U+FFFD. Nothing in pg can repair that: do not use
  // `binary: true` with sno (nor bytea) columns; id::text is the way out if you must.
  const b = new pg.Client({ binary: true })
  await b.connect()
  try {
    const { rows: [r], fields: f } = await b.query(
      'SELECT id, id::bytea AS raw, id::text AS text FROM (SELECT $1::sno AS id) s', [GO_TEXT])
    assert.deepEqual(f.map(x => x.format), ['binary', 'binary', 'binary'])
    assert.equal(typeof r.id, 'string')
    assert.notEqual(r.id, GO_TEXT)
    assert.notDeepEqual(Buffer.from(r.id), GO_BYTES, 'binary mode still corrupts: update the README if not')
    assert.ok(r.id.includes('\ufffd'), 'the bytes >= 0x80 are replaced with U+FFFD')
    assert.notDeepEqual(r.raw, GO_BYTES)
    assert.equal(r.text, GO_TEXT)
    // Parameters are unaffected: a Buffer still arrives intact.
    const { rows: [p] } = await b.query('SELECT $1::sno::text AS id', [GO_BYTES])
    assert.equal(p.id, GO_TEXT)
  } finally {
    await b.end()
  }
})

test('sno[] parameters: arrays of strings, Buffers or both (out of the box)', async () => {
  const a = make(9, 1, 1)
  // RECIPE node: array parameter
  await client.query('UPDATE node_orders SET tags = $1 WHERE note = $2',
    [[GO_TEXT, a, null], 'text'])
  // END RECIPE
  // (a Buffer element goes as '\x...' text inside the array literal, which sno accepts: an
  // 11-byte one gets the hex form's error)
  await assert.rejects(client.query('SELECT $1::sno[]', [[Buffer.alloc(11)]]),
    { code: '22P02', detail: /bytea hex form of a sno ID is \\x and exactly 20 hex digits/ })
  const { rows: [r] } = await client.query(
    "SELECT tags::text[] AS tags FROM node_orders WHERE note = 'text'")
  assert.deepEqual(r.tags, [GO_TEXT, encode(a), null])
  const { rows: [e] } = await client.query('SELECT $1::sno[] AS e', [[]])
  assert.equal(e.e, '{}')
})

test('TRAP: a sno[] result is the array literal string while no type parser is registered', async () => {
  const { rows: [r] } = await client.query("SELECT tags FROM node_orders WHERE note = 'text'")
  assert.equal(typeof r.tags, 'string')
  assert.match(r.tags, /^\{brpk4q72xwf2m63l,[2-9a-x]{16},NULL\}$/)
})

test('sno[] results as JS arrays: register the text[] parser for sno[]\'s OID (recipe)', async () => {
  // RECIPE node: array result
  // sno[]'s OID differs per database (CREATE EXTENSION assigns it): look it up once per database.
  const { rows: [{ oid }] } = await client.query("SELECT 'sno[]'::regtype::oid AS oid")
  pg.types.setTypeParser(oid, pg.types.getTypeParser(1009)) // 1009: text[]
  const { rows: [r] } = await client.query("SELECT tags FROM node_orders WHERE note = 'text'")
  // r.tags: ['brpk4q72xwf2m63l', '...', null]
  // END RECIPE
  assert.equal(typeof oid, 'number')
  assert.ok(Array.isArray(r.tags))
  assert.equal(r.tags.length, 3)
  assert.equal(r.tags[0], GO_TEXT)
  assert.match(r.tags[1], /^[2-9a-x]{16}$/)
  assert.equal(r.tags[2], null)
  // Or per query, with no registration: tags::text[] (previous tests) or tags::bytea[] for Buffers.
  const { rows: [b] } = await client.query(
    "SELECT tags[1:1]::bytea[] AS raw FROM node_orders WHERE note = 'text'")
  assert.deepEqual(b.raw, [GO_BYTES])
})

test('an ID as a WHERE parameter: string, Buffer, or an array for = ANY (out of the box)', async () => {
  const { rows: [{ id }] } = await client.query("SELECT id FROM node_orders WHERE note = 'bytes'")
  const bytes = decode(id)
  // RECIPE node: WHERE
  const { rows: byText } = await client.query('SELECT note FROM node_orders WHERE id = $1', [id])
  const { rows: byBytes } = await client.query('SELECT note FROM node_orders WHERE id = $1', [bytes])
  const { rows: some } = await client.query(
    'SELECT note FROM node_orders WHERE id = ANY($1) ORDER BY id', [[id, GO_TEXT]])
  // END RECIPE
  assert.deepEqual(byText, [{ note: 'bytes' }])
  assert.deepEqual(byBytes, [{ note: 'bytes' }])
  assert.deepEqual(some, [{ note: 'bytes' }])
  const { rows: both } = await client.query(
    "SELECT note FROM node_orders WHERE id = ANY($1) AND note IN ('text', 'bytes') ORDER BY note",
    [[id, decode((await client.query("SELECT id FROM node_orders WHERE note = 'text'")).rows[0].id)]])
  assert.deepEqual(both, [{ note: 'bytes' }, { note: 'text' }])
})

test('bad input is an error, not a silent conversion', async () => {
  await assert.rejects(client.query('INSERT INTO node_orders (id) VALUES ($1)', ['brpk4q72xwf2m63']),
    { code: '22P02' })
  await assert.rejects(client.query('INSERT INTO node_orders (id) VALUES ($1)', [Buffer.alloc(16)]),
    { code: '22P03' })
})
