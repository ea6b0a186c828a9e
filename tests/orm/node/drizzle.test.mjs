// Drizzle ORM (node-postgres driver) and drizzle-kit with the README's schema.js, drizzle.config.js
// and db.js: drizzle-kit push on an empty database makes sno columns with the default, a second
// push finds nothing to do; drizzle-kit pull writes what the README says; the six checks; bad IDs.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import {
  BAD_IDS, WORK, assertBulk, assertId, assertSnoError, assertSnoTables, block, dropDb, freshDb, idsSince,
  importFile, pkg, rejection, sqlOn, timeFixture, url, workdir, write,
} from './common.mjs'

const run = promisify(execFile)
const kit = path.join(WORK, '..', 'node_modules', '.bin', 'drizzle-kit')
let db, dir, schema, conn, d

before(async () => {
  db = await freshDb('drizzle')
  dir = workdir('drizzle')
  write(dir, 'schema.js', block('drizzle-schema', 'js'))
  write(dir, 'drizzle.config.js', block('drizzle-config', 'js'))
  process.env.DATABASE_URL = url(db)
  d = await pkg('drizzle-orm')
})
after(async () => {
  await conn?.$client.end()
  await dropDb(db)
})

const push = () => run(kit, ['push', '--force', '--verbose'], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } })

test('drizzle: drizzle-kit push makes sno columns with the default', async () => {
  const { stdout } = await push()
  assert.match(stdout, /CREATE TABLE "orders"/)
  assert.doesNotMatch(stdout, /DROP VIEW/)
  await assertSnoTables(db)
  schema = await importFile(path.join(dir, 'schema.js'))
  conn = (await importFile(write(dir, 'db.js', block('drizzle-db', 'js')))).db
})

test('drizzle: a second drizzle-kit push changes nothing', async () => {
  const { stdout } = await push()
  assert.match(stdout, /No changes detected/)
  assert.doesNotMatch(stdout, /ALTER|CREATE|DROP/)
  await assertSnoTables(db)
})

test('drizzle: without the tablesFilter, push wants to drop the extension\'s views (why the README has it)', async () => {
  const cfg = block('drizzle-config', 'js')
  const without = cfg.replace(/^ *tablesFilter:.*\n/m, '')
  assert.notEqual(without, cfg)
  write(dir, 'nofilter.config.js', without)
  // drizzle-kit prints the error and exits 0 (0.31.11): the output is what tells.
  const out = await run(kit, ['push', '--force', '--verbose', '--config', 'nofilter.config.js'], { cwd: dir }).catch((e) => e)
  assert.match(out.stdout + out.stderr, /DROP VIEW "public"\."sno_generator"/)
  assert.match(out.stdout + out.stderr, /cannot drop view sno_generator because extension sno requires it/)
  await assertSnoTables(db)
})

test('drizzle: drizzle-kit pull writes unknown("id") and drops the default (as the README says)', async () => {
  write(dir, 'pull.config.js', block('drizzle-config', 'js').replace("schema: './schema.js',", "out: './pulled',"))
  await run(kit, ['pull', '--config', 'pull.config.js'], { cwd: dir })
  const pulled = fs.readFileSync(path.join(dir, 'pulled', 'schema.ts'), 'utf8')
  assert.match(pulled, /\/\/ TODO: failed to parse database type 'sno'\n\s*id: unknown\("id"\)\.primaryKey\(\)\.notNull\(\),/)
  assert.doesNotMatch(pulled, /sno_generate/)
})

test('drizzle: insert returning the generated id, a 16-character string', async () => {
  const [o] = await conn.insert(schema.orders).values({ customer: 42 }).returning()
  assertId(o.id)
  assert.equal(o.customer, 42)
})

test('drizzle: select by id', async () => {
  const [o] = await conn.insert(schema.orders).values({ customer: 7 }).returning()
  assert.deepEqual(await conn.select().from(schema.orders).where(d.eq(schema.orders.id, o.id)), [o])
  assert.deepEqual(await conn.query.orders.findFirst({ where: d.eq(schema.orders.id, o.id) }), o)
})

test('drizzle: orderBy id and id > x', async () => {
  const made = (await conn.insert(schema.orders).values([1, 2, 3, 4, 5].map((i) => ({ customer: 100 + i })))
    .returning()).map((o) => o.id)
  const rows = await conn.select().from(schema.orders).where(d.gt(schema.orders.id, made[1])).orderBy(d.asc(schema.orders.id))
  const expected = (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE id > $1::sno ORDER BY id', [made[1]])).map((r) => r.id)
  assert.deepEqual(rows.map((o) => o.id), expected)
  assert.deepEqual(rows.slice(0, 3).map((o) => o.id), made.slice(2))
})

test('drizzle: the relation (db.query with items, and back)', async () => {
  const [o] = await conn.insert(schema.orders).values({ customer: 8 }).returning()
  await conn.insert(schema.items).values([{ orderId: o.id }, { orderId: o.id }])
  const got = await conn.query.orders.findFirst({ where: d.eq(schema.orders.id, o.id), with: { items: true } })
  assert.equal(got.items.length, 2)
  got.items.forEach((i) => { assertId(i.id); assert.equal(i.orderId, o.id) })
  const item = await conn.query.items.findFirst({ where: d.eq(schema.items.orderId, o.id), with: { order: true } })
  assert.deepEqual(item.order, o)
})

test('drizzle: sno_time(id) in a sql`` where', async () => {
  const { before, after, since } = await timeFixture(db)
  const rows = await conn.select().from(schema.orders)
    .where(d.sql`sno_time(${schema.orders.id}) >= ${since}`).orderBy(schema.orders.id)
  const ids = rows.map((r) => r.id)
  assert.ok(ids.includes(after) && !ids.includes(before))
  assert.deepEqual(ids, await idsSince(db, since))
})

test('drizzle: insert of 1,000 rows returning the ids', async () => {
  const rows = await conn.insert(schema.orders)
    .values(Array.from({ length: 1000 }, (_, i) => ({ customer: 10000 + i }))).returning({ id: schema.orders.id })
  await assertBulk(db, rows.map((r) => r.id), 1000)
})

for (const bad of BAD_IDS) {
  test(`drizzle: a bad id ${JSON.stringify(bad)} is the sno error, 22P02`, async () => {
    for (const q of [
      () => conn.select().from(schema.orders).where(d.eq(schema.orders.id, bad)),
      () => conn.insert(schema.items).values({ orderId: bad }),
    ]) {
      const e = await rejection(q)
      assertSnoError(e.cause ?? e, bad)
    }
  })
}
