// Kysely (PostgresDialect over pg) with the README's db and migration: the migration makes sno
// columns with the default; db.introspection reports what the README says; the six checks; a
// text-typed parameter against a sno column (sno 0.4.0's cross-type operators); bad IDs.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  BAD_IDS, assertBulk, assertId, assertSnoError, assertSnoTables, block, dropDb, freshDb, idsSince,
  importFile, pkg, rejection, sqlOn, timeFixture, url, workdir, write,
} from './common.mjs'

let db, m, sql, jsonArrayFrom

before(async () => {
  db = await freshDb('kysely')
  process.env.DATABASE_URL = url(db)
  m = await importFile(write(workdir('kysely'), 'db.js', block('kysely-db', 'js')))
  const k = await pkg('kysely')
  sql = k.sql
  jsonArrayFrom = (await pkg('kysely/helpers/postgres')).jsonArrayFrom
})
after(async () => {
  await m?.db.destroy()
  await dropDb(db)
})

test('kysely: the migration makes sno columns with the default', async () => {
  await m.up(m.db)
  await assertSnoTables(db)
})

test('kysely: db.introspection.getTables() reports sno, a default, no auto-increment', async () => {
  const tables = await m.db.introspection.getTables()
  const cols = Object.fromEntries(tables.filter((t) => t.name === 'orders' || t.name === 'items')
    .flatMap((t) => t.columns.map((c) => [`${t.name}.${c.name}`, [c.dataType, c.hasDefaultValue, c.isAutoIncrementing, c.isNullable]])))
  assert.deepEqual(cols, {
    'orders.id': ['sno', true, false, false],
    'orders.customer': ['int4', false, false, false],
    'items.id': ['sno', true, false, false],
    'items.order_id': ['sno', false, false, false],
  })
})

test('kysely: insert returning the generated id, a 16-character string', async () => {
  const o = await m.db.insertInto('orders').values({ customer: 42 }).returning(['id', 'customer']).executeTakeFirstOrThrow()
  assertId(o.id)
  assert.equal(o.customer, 42)
})

test('kysely: select by id', async () => {
  const { id } = await m.db.insertInto('orders').values({ customer: 7 }).returning('id').executeTakeFirstOrThrow()
  assert.deepEqual(await m.db.selectFrom('orders').selectAll().where('id', '=', id).execute(), [{ id, customer: 7 }])
})

test('kysely: order by id and id > x', async () => {
  const made = (await m.db.insertInto('orders').values([1, 2, 3, 4, 5].map((i) => ({ customer: 100 + i })))
    .returning('id').execute()).map((r) => r.id)
  const rows = await m.db.selectFrom('orders').select('id').where('id', '>', made[1]).orderBy('id').execute()
  const expected = (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE id > $1::sno ORDER BY id', [made[1]])).map((r) => r.id)
  assert.deepEqual(rows.map((o) => o.id), expected)
  assert.deepEqual(rows.slice(0, 3).map((o) => o.id), made.slice(2))
})

test('kysely: the items of an order (jsonArrayFrom, and a join)', async () => {
  const { id } = await m.db.insertInto('orders').values({ customer: 8 }).returning('id').executeTakeFirstOrThrow()
  await m.db.insertInto('items').values([{ order_id: id }, { order_id: id }]).execute()
  const got = await m.db.selectFrom('orders').select((eb) => ['id',
    jsonArrayFrom(eb.selectFrom('items').select(['items.id', 'items.order_id']).whereRef('items.order_id', '=', 'orders.id').orderBy('items.id')).as('items'),
  ]).where('id', '=', id).executeTakeFirstOrThrow()
  assert.equal(got.items.length, 2)
  got.items.forEach((i) => { assertId(i.id); assert.equal(i.order_id, id) })
  const joined = await m.db.selectFrom('items').innerJoin('orders', 'orders.id', 'items.order_id')
    .select(['items.id', 'orders.customer']).where('orders.id', '=', id).execute()
  assert.deepEqual(joined.map((r) => r.customer), [8, 8])
})

test('kysely: sno_time(id) in a sql`` where', async () => {
  const { before, after, since } = await timeFixture(db)
  const rows = await m.db.selectFrom('orders').select('id').where(sql`sno_time(id)`, '>=', since).orderBy('id').execute()
  const ids = rows.map((r) => r.id)
  assert.ok(ids.includes(after) && !ids.includes(before))
  assert.deepEqual(ids, await idsSince(db, since))
})

test('kysely: insert of 1,000 rows returning the ids', async () => {
  const rows = await m.db.insertInto('orders').values(Array.from({ length: 1000 }, (_, i) => ({ customer: 10000 + i })))
    .returning('id').execute()
  await assertBulk(db, rows.map((r) => r.id), 1000)
})

// The Node.js ORMs send strings untyped, so they never needed this; an ORM or a query that types
// the string (as SQLAlchemy does, ::VARCHAR) needs sno 0.4.0's sno-text operators and its
// assignment cast. Fails on sno 0.3.0 (operator does not exist: sno = text).
test('kysely: text- and varchar-typed strings against a sno column (sno >= 0.4.0)', async () => {
  const { id } = await m.db.insertInto('orders').values({ customer: 9 }).returning('id').executeTakeFirstOrThrow()
  const got = await m.db.selectFrom('orders').select('customer')
    .where('id', '=', sql`${id}::text`).where('id', '<=', sql`${id}::varchar`).execute()
  assert.deepEqual(got, [{ customer: 9 }])
  const item = await m.db.insertInto('items').values({ order_id: sql`${id}::varchar` }).returning('order_id').executeTakeFirstOrThrow()
  assert.equal(item.order_id, id)
  const e = await rejection(() => m.db.selectFrom('orders').select('id').where('id', '=', sql`${BAD_IDS[0]}::text`).execute())
  assertSnoError(e, BAD_IDS[0])
})

for (const bad of BAD_IDS) {
  test(`kysely: a bad id ${JSON.stringify(bad)} is the sno error, 22P02`, async () => {
    for (const q of [
      () => m.db.selectFrom('orders').selectAll().where('id', '=', bad).execute(),
      () => m.db.insertInto('items').values({ order_id: bad }).execute(),
    ]) assertSnoError(await rejection(q), bad)
  })
}
