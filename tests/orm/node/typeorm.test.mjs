// TypeORM (EntitySchema, plain JavaScript) with the README's data source: type 'sno' accepted,
// synchronize makes sno columns with the default, a second synchronize runs no DDL (every query
// logged) and plans none; the six checks; bad IDs; and the pitfall the README warns about: the
// same entities mapped as 'varchar', synchronized over sno tables, drop the sno columns and add
// varchar ones (the ids are lost).
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  BAD_IDS, assertBulk, assertId, assertSnoError, assertSnoTables, block, columnOf, dropDb, freshDb, idsSince,
  importFile, pkg, rejection, sqlOn, timeFixture, url, workdir, write,
} from './common.mjs'

let db, dir, m, t
const queries = []

before(async () => {
  db = await freshDb('typeorm')
  dir = workdir('typeorm')
  process.env.DATABASE_URL = url(db)
  m = await importFile(write(dir, 'data-source.js', block('typeorm-data-source', 'js')))
  t = await pkg('typeorm')
  // Every query the data source runs, through TypeORM's logger interface.
  m.dataSource.logger = {
    logQuery: (q) => queries.push(q),
    logQueryError: () => {},
    logQuerySlow: () => {},
    logSchemaBuild: () => {},
    logMigration: () => {},
    log: () => {},
  }
  await m.dataSource.initialize()
})
after(async () => {
  if (m?.dataSource.isInitialized) await m.dataSource.destroy()
  await dropDb(db)
})

test('typeorm: without the line that lists sno, type \'sno\' is DataTypeNotSupportedError', async () => {
  const code = block('typeorm-data-source', 'js')
  const without = code.replace(/^dataSource\.driver\.supportedDataTypes\.push\('sno'\).*\n/m, '')
  assert.notEqual(without, code)
  const other = await importFile(write(dir, 'without.js', without))
  const e = await rejection(() => other.dataSource.initialize())
  assert.equal(e.name, 'DataTypeNotSupportedError')
  if (other.dataSource.isInitialized) await other.dataSource.destroy()
})

test('typeorm: synchronize makes sno columns with the default', async () => {
  await m.dataSource.synchronize()
  assert.ok(queries.some((q) => q.startsWith('CREATE TABLE "orders" ("id" sno NOT NULL DEFAULT sno_generate(1)')), queries.join('\n'))
  await assertSnoTables(db)
})

test('typeorm: synchronize again runs no DDL and plans none', async () => {
  queries.length = 0
  await m.dataSource.synchronize()
  const ddl = queries.filter((q) => /^\s*(ALTER|CREATE|DROP|COMMENT)\b/i.test(q))
  assert.deepEqual(ddl, [])
  assert.ok(queries.length > 0, 'the logger saw the introspection queries')
  const plan = await m.dataSource.driver.createSchemaBuilder().log()
  assert.deepEqual(plan.upQueries.map((q) => q.query), [])
  await assertSnoTables(db)
})

test('typeorm: save returns the generated id, a 16-character string', async () => {
  const o = await m.dataSource.getRepository(m.Order).save({ customer: 42 })
  assertId(o.id)
  const [r] = await sqlOn(db, 'SELECT customer FROM orders WHERE id = $1::sno', [o.id])
  assert.equal(r.customer, 42)
})

test('typeorm: findOneBy id', async () => {
  const repo = m.dataSource.getRepository(m.Order)
  const o = await repo.save({ customer: 7 })
  assert.deepEqual({ ...(await repo.findOneBy({ id: o.id })) }, { id: o.id, customer: 7 })
})

test('typeorm: order by id and MoreThan(x)', async () => {
  const repo = m.dataSource.getRepository(m.Order)
  const made = []
  for (let i = 0; i < 5; i++) made.push((await repo.save({ customer: 100 + i })).id)
  const rows = await repo.find({ where: { id: t.MoreThan(made[1]) }, order: { id: 'ASC' } })
  const expected = (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE id > $1::sno ORDER BY id', [made[1]])).map((r) => r.id)
  assert.deepEqual(rows.map((o) => o.id), expected)
  assert.deepEqual(rows.slice(0, 3).map((o) => o.id), made.slice(2))
})

test('typeorm: the relation (relations: { items: true }, and back)', async () => {
  const o = await m.dataSource.getRepository(m.Order).save({ customer: 8 })
  const items = m.dataSource.getRepository(m.Item)
  await items.save([{ order: o }, { order: o }])
  const got = await m.dataSource.getRepository(m.Order).findOne({ where: { id: o.id }, relations: { items: true } })
  assert.equal(got.items.length, 2)
  got.items.forEach((i) => assertId(i.id))
  const item = await items.findOne({ where: { id: got.items[0].id }, relations: { order: true } })
  assert.equal(item.order.id, o.id)
  const [{ n }] = await sqlOn(db, 'SELECT count(*)::int AS n FROM items WHERE order_id = $1::sno', [o.id])
  assert.equal(n, 2)
})

test('typeorm: sno_time(id) in a query builder where', async () => {
  const { before, after, since } = await timeFixture(db)
  const rows = await m.dataSource.getRepository(m.Order).createQueryBuilder('o')
    .where('sno_time(o.id) >= :since', { since }).orderBy('o.id').getMany()
  const ids = rows.map((r) => r.id)
  assert.ok(ids.includes(after) && !ids.includes(before))
  assert.deepEqual(ids, await idsSince(db, since))
})

test('typeorm: insert of 1,000 rows, ids in identifiers', async () => {
  const r = await m.dataSource.getRepository(m.Order).insert(Array.from({ length: 1000 }, (_, i) => ({ customer: 10000 + i })))
  await assertBulk(db, r.identifiers.map((x) => x.id), 1000)
})

for (const bad of BAD_IDS) {
  test(`typeorm: a bad id ${JSON.stringify(bad)} is the sno error, 22P02`, async () => {
    const orders = m.dataSource.getRepository(m.Order)
    for (const q of [
      () => orders.findOneBy({ id: bad }),
      () => m.dataSource.getRepository(m.Item).insert({ order: { id: bad } }),
    ]) {
      const e = await rejection(q)
      assert.equal(e.name, 'QueryFailedError')
      assertSnoError(e, bad)
    }
  })
}

test('typeorm: the pitfall: the same entities as varchar, synchronized over sno tables, drop and re-add the columns (throwaway database)', async () => {
  const pit = await freshDb('typeorm_varchar')
  try {
    // The README's tables, made by the sno data source, with an order in them.
    const code = block('typeorm-data-source', 'js').replaceAll("type: 'sno'", "type: 'varchar'")
    assert.notEqual(code, block('typeorm-data-source', 'js'))
    process.env.DATABASE_URL = url(pit)
    const snoSource = await importFile(write(dir, 'sno-again.js', block('typeorm-data-source', 'js') + '\n// again\n'))
    await snoSource.dataSource.initialize()
    await snoSource.dataSource.synchronize()
    const kept = await snoSource.dataSource.getRepository(snoSource.Order).save({ customer: 1 })
    await snoSource.dataSource.destroy()
    await assertSnoTables(pit)
    // The same entities with a string type: synchronize plans DROP COLUMN and ADD ... varchar.
    const v = await importFile(write(dir, 'varchar.js', code))
    await v.dataSource.initialize()
    const plan = (await v.dataSource.driver.createSchemaBuilder().log()).upQueries.map((q) => q.query)
    for (const expected of [
      'ALTER TABLE "orders" DROP COLUMN "id"',
      'ALTER TABLE "orders" ADD "id" character varying NOT NULL DEFAULT sno_generate(1)',
      'ALTER TABLE "items" DROP COLUMN "order_id"',
      'ALTER TABLE "items" ADD "order_id" character varying NOT NULL',
    ]) assert.ok(plan.includes(expected), `${expected} in\n${plan.join('\n')}`)
    await v.dataSource.synchronize()
    await v.dataSource.destroy()
    assert.equal((await columnOf(pit, 'orders', 'id')).type, 'character varying')
    assert.equal((await columnOf(pit, 'items', 'order_id')).type, 'character varying')
    // The order is still there, under a new id: the old one is gone.
    const rows = await sqlOn(pit, 'SELECT id, customer FROM orders')
    assert.equal(rows.length, 1)
    assert.equal(rows[0].customer, 1)
    assert.notEqual(rows[0].id, kept.id)
  } finally {
    process.env.DATABASE_URL = url(db)
    await dropDb(pit)
  }
})
