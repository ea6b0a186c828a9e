// Sequelize 6 with the README's models: sync() makes sno columns with the default, a second
// sync() changes nothing; the six checks; bad IDs.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  BAD_IDS, assertBulk, assertId, assertSnoError, assertSnoTables, block, dropDb, freshDb, idsSince,
  importFile, pkg, rejection, sqlOn, timeFixture, url, workdir, write,
} from './common.mjs'

let db, m, S
const queries = []

before(async () => {
  db = await freshDb('sequelize')
  process.env.DATABASE_URL = url(db)
  m = await importFile(write(workdir('sequelize'), 'models.js', block('sequelize-models', 'js')))
  S = await pkg('sequelize')
  m.sequelize.options.logging = (q) => queries.push(q)
})
after(async () => {
  await m?.sequelize.close()
  await dropDb(db)
})

test('sequelize: sync() makes sno columns with the default', async () => {
  await m.sequelize.sync()
  await assertSnoTables(db)
})

test('sequelize: a second sync() changes nothing', async () => {
  queries.length = 0
  await m.sequelize.sync()
  assert.ok(queries.length > 0)
  assert.deepEqual(queries.filter((q) => /\b(ALTER|DROP|CREATE TABLE)\b/.test(q) && !/CREATE TABLE IF NOT EXISTS/.test(q)), [])
  await assertSnoTables(db)
})

test('sequelize: create returns the generated id, a 16-character string', async () => {
  const o = await m.Order.create({ customer: 42 })
  assertId(o.id)
  const [r] = await sqlOn(db, 'SELECT customer FROM orders WHERE id = $1::sno', [o.id])
  assert.equal(r.customer, 42)
})

test('sequelize: findByPk', async () => {
  const o = await m.Order.create({ customer: 7 })
  assert.deepEqual((await m.Order.findByPk(o.id)).get({ plain: true }), { id: o.id, customer: 7 })
})

test('sequelize: order by id and id > x', async () => {
  const made = []
  for (let i = 0; i < 5; i++) made.push((await m.Order.create({ customer: 100 + i })).id)
  const rows = await m.Order.findAll({ where: { id: { [S.Op.gt]: made[1] } }, order: [['id', 'ASC']] })
  const expected = (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE id > $1::sno ORDER BY id', [made[1]])).map((r) => r.id)
  assert.deepEqual(rows.map((o) => o.id), expected)
  assert.deepEqual(rows.slice(0, 3).map((o) => o.id), made.slice(2))
})

test('sequelize: the association (include items, and back)', async () => {
  const o = await m.Order.create({ customer: 8 })
  await m.Item.bulkCreate([{ orderId: o.id }, { orderId: o.id }])
  const got = await m.Order.findByPk(o.id, { include: 'items' })
  assert.equal(got.items.length, 2)
  got.items.forEach((i) => { assertId(i.id); assert.equal(i.orderId, o.id) })
  const item = await m.Item.findByPk(got.items[0].id, { include: 'order' })
  assert.equal(item.order.id, o.id)
})

test('sequelize: sno_time(id) through sequelize.where/fn/col', async () => {
  const { before, after, since } = await timeFixture(db)
  const { sequelize } = m
  const rows = await m.Order.findAll({
    where: sequelize.where(sequelize.fn('sno_time', sequelize.col('id')), S.Op.gte, since),
    order: [['id', 'ASC']],
  })
  const ids = rows.map((r) => r.id)
  assert.ok(ids.includes(after) && !ids.includes(before))
  assert.deepEqual(ids, await idsSince(db, since))
})

test('sequelize: bulkCreate of 1,000 rows returns the ids', async () => {
  const rows = await m.Order.bulkCreate(Array.from({ length: 1000 }, (_, i) => ({ customer: 10000 + i })))
  await assertBulk(db, rows.map((r) => r.id), 1000)
})

for (const bad of BAD_IDS) {
  test(`sequelize: a bad id ${JSON.stringify(bad)} is the sno error, 22P02`, async () => {
    for (const q of [
      () => m.Order.findByPk(bad),
      () => m.Item.create({ orderId: bad }),
    ]) {
      const e = await rejection(q)
      assert.equal(e.name, 'SequelizeDatabaseError')
      assertSnoError(e.original, bad)
    }
  })
}
