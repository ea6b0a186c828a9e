// What the Node.js ORM tests share: the README's blocks, a work directory where they are written
// as files, the ORMs' packages as the blocks themselves import them, throwaway databases, and
// the assertions every ORM goes through.
//
// The README's blocks: every fenced block between <!-- orm-section:node --> and
// <!-- /orm-section:node --> that follows a line <!-- orm-node: NAME --> is block NAME. The tests
// write those blocks to files as printed and import or run them, never a copy of them.
//
// The work directory (SNO_ORM_NODE_WORK, made by tests/client/orm_node.sh) lies under the
// directory whose node_modules holds the pinned packages, so a block's `import ... from 'typeorm'`
// finds them; it is a "type": "module" package, so the blocks are ES modules as printed. The
// tests import the packages through the same resolution (pkg() below), so that a block and its
// test share one copy of each module (TypeORM's FindOperator, drizzle's SQL are classes).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '../../..')
export const WORK = process.env.SNO_ORM_NODE_WORK
if (!WORK) throw new Error('SNO_ORM_NODE_WORK is not set: run tests/client/orm_node.sh')

// The server: a Unix socket directory and a port, user postgres (as the other client tests).
const HOST = process.env.PGHOST
const PORT = process.env.PGPORT
export const url = (db) => `postgresql://postgres@localhost:${PORT}/${db}?host=${encodeURIComponent(HOST)}`

// Bad IDs: 15 characters, a 'z' (not in the alphabet), a '!'.
export const BAD_IDS = ['brpk4q72xwf2m63', 'brpk4q72xwf2m63z', 'brpk4q72xwf2m63!']
// A valid ID: 16 characters of the alphabet 2-9, a-x.
export const ID_RE = /^[2-9a-x]{16}$/

export function readmeBlocks () {
  const text = fs.readFileSync(path.join(ROOT, 'doc', 'orms.md'), 'utf8')
  const m = text.match(/<!-- orm-section:node -->\n([\s\S]*?)<!-- \/orm-section:node -->/)
  if (!m) throw new Error('doc/orms.md has no <!-- orm-section:node --> section')
  const blocks = {}
  for (const b of m[1].matchAll(/<!-- orm-node: ([\w-]+) -->\n```(\w+)\n([\s\S]*?)```\n/g)) {
    if (blocks[b[1]]) throw new Error(`doc/orms.md: two blocks named ${b[1]}`)
    blocks[b[1]] = { lang: b[2], code: b[3] }
  }
  return blocks
}
const BLOCKS = readmeBlocks()

export function block (name, lang) {
  const b = BLOCKS[name]
  if (!b) throw new Error(`doc/orms.md has no block <!-- orm-node: ${name} --> (it has ${Object.keys(BLOCKS).sort()})`)
  if (lang && b.lang !== lang) throw new Error(`doc/orms.md block ${name} is \`\`\`${b.lang}, not ${lang}`)
  return b.code
}

// A directory for one ORM's files under WORK; write(dir, 'schema.js', code) returns its path.
export function workdir (name) {
  const dir = path.join(WORK, name)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n')
  return dir
}
export function write (dir, file, text) {
  const full = path.join(dir, file)
  fs.mkdirSync(path.dirname(full), { recursive: true })
  fs.writeFileSync(full, text)
  return full
}
export const importFile = (file) => import(pathToFileURL(file).href)

// A package's namespace, resolved from WORK as the README's blocks resolve it.
export async function pkg (name) {
  const file = write(WORK, `_pkg_${name.replace(/\W/g, '_')}.js`, `export * as ns from '${name}'\n`)
  return (await importFile(file)).ns
}

const pg = (await pkg('pg')).default

// psql-like access for the tests' own checks (the catalog, counts, times), outside any ORM.
export async function sqlOn (db, text, params = []) {
  const c = new pg.Client({ connectionString: url(db) })
  await c.connect()
  try { return (await c.query(text, params)).rows } finally { await c.end() }
}

// A fresh database with the extension, dropped first if a run left it; returns its name.
export async function freshDb (name) {
  const db = `sno_orm_node_${name}`
  await sqlOn('postgres', `DROP DATABASE IF EXISTS ${db}`)
  await sqlOn('postgres', `CREATE DATABASE ${db}`)
  await sqlOn(db, 'CREATE EXTENSION sno')
  return db
}
export async function dropDb (db) {
  await sqlOn('postgres', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`)
}

// The catalog's view of a column: its type and default, as \d prints them.
export async function columnOf (db, table, column) {
  const [r] = await sqlOn(db, `SELECT format_type(a.atttypid, a.atttypmod) AS type,
      pg_get_expr(d.adbin, d.adrelid) AS "default", a.attnotnull AS notnull
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = $1::regclass AND a.attname = $2 AND NOT a.attisdropped`, [table, column])
  return r
}

// The sno columns of orders and items are sno, the keys default to sno_generate(1).
export async function assertSnoTables (db) {
  assert.deepEqual(await columnOf(db, 'orders', 'id'), { type: 'sno', default: 'sno_generate(1)', notnull: true })
  assert.deepEqual(await columnOf(db, 'items', 'id'), { type: 'sno', default: 'sno_generate(1)', notnull: true })
  assert.deepEqual(await columnOf(db, 'items', 'order_id'), { type: 'sno', default: null, notnull: true })
  const fk = await sqlOn(db, `SELECT confrelid::regclass::text AS ref FROM pg_constraint
    WHERE conrelid = 'items'::regclass AND contype = 'f'`)
  assert.deepEqual(fk, [{ ref: 'orders' }])
}

export function assertId (id) {
  assert.equal(typeof id, 'string', `an ID is a string, got ${typeof id} ${id}`)
  assert.match(id, ID_RE)
}

// The sno input error, as node-postgres reports it (e is the pg error, or what carries it).
export function assertSnoError (e, bad) {
  assert.equal(e.code, '22P02', `SQLSTATE of ${e}`)
  assert.match(e.message, /invalid input syntax for type sno/)
  assert.ok(e.message.includes(bad), `the message names the value: ${e.message}`)
}

// Two orders a few clock ticks apart, made by SQL: { before, after, since } where since is
// sno_time(after) as a Date; a filter sno_time(id) >= since must take after and not before.
export async function timeFixture (db) {
  const [{ id: before }] = await sqlOn(db, 'INSERT INTO orders (customer) VALUES (-1) RETURNING id::text AS id')
  await new Promise((resolve) => setTimeout(resolve, 50))
  const [{ id: after, t }] = await sqlOn(db,
    'INSERT INTO orders (customer) VALUES (-2) RETURNING id::text AS id, sno_time(id) AS t')
  return { before, after, since: t }
}

// The ids sno_time(id) >= since takes, by SQL, in order: what the ORM's filter must return.
export async function idsSince (db, since) {
  return (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE sno_time(id) >= $1 ORDER BY id', [since]))
    .map((r) => r.id)
}

// n ids: all valid, distinct, and in the table.
export async function assertBulk (db, ids, n, table = 'orders') {
  assert.equal(ids.length, n)
  ids.forEach(assertId)
  assert.equal(new Set(ids).size, n)
  const [{ count }] = await sqlOn(db, `SELECT count(*)::int AS count FROM ${table} WHERE id = ANY($1::sno[])`, [ids])
  assert.equal(count, n)
}

// Expects fn to reject; returns the error.
export async function rejection (fn) {
  try {
    await fn()
  } catch (e) {
    return e
  }
  assert.fail('no error')
}
