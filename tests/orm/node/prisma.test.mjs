// Prisma 7 (prisma-client-js generator, @prisma/adapter-pg) with the README's schema, client and
// tables. `prisma generate` runs offline with PRISMA_SCHEMA_ENGINE_BINARY pointed at /bin/false:
// the CLI insists on the schema engine (a download from binaries.prisma.sh, out of reach here)
// before any command, and generate never runs it. db push / db pull / migrate need that engine
// and are not tested.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import {
  BAD_IDS, WORK, assertBulk, assertId, assertSnoTables, block, dropDb, freshDb, idsSince, importFile,
  rejection, sqlOn, timeFixture, url, workdir, write,
} from './common.mjs'

const run = promisify(execFile)
const prismaCli = path.join(WORK, '..', 'node_modules', '.bin', 'prisma')
const env = { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false', PRISMA_HIDE_UPDATE_MESSAGE: '1', NO_COLOR: '1' }
let db, dir, prisma

before(async () => {
  db = await freshDb('prisma')
  dir = workdir('prisma')
  write(dir, 'prisma/schema.prisma', block('prisma-schema', 'prisma'))
  await run(prismaCli, ['generate', '--schema', 'prisma/schema.prisma'], { cwd: dir, env })
  await sqlOn(db, block('prisma-tables', 'sql'))
  process.env.DATABASE_URL = url(db)
  prisma = (await importFile(write(dir, 'db.js', block('prisma-client', 'js')))).prisma
})
after(async () => {
  await prisma?.$disconnect()
  await dropDb(db)
})

test('prisma: the README\'s tables (SQL) are sno with the default', async () => {
  await assertSnoTables(db)
})

test('prisma: Unsupported("sno") @id is rejected by the schema validation (as the README says)', async () => {
  const bad = block('prisma-schema', 'prisma')
    .replace('id       String @id @default', 'id       Unsupported("sno") @id @default')
  assert.notEqual(bad, block('prisma-schema', 'prisma'))
  write(dir, 'bad/schema.prisma', bad)
  const e = await rejection(() => run(prismaCli, ['validate', '--schema', 'bad/schema.prisma'], { cwd: dir, env }))
  assert.match(e.stdout + e.stderr, /Each model must have at least one unique criteria/)
})

test('prisma: create returns the generated id, a 16-character string', async () => {
  const o = await prisma.order.create({ data: { customer: 42 } })
  assertId(o.id)
  const [r] = await sqlOn(db, 'SELECT customer FROM orders WHERE id = $1::sno', [o.id])
  assert.equal(r.customer, 42)
})

test('prisma: findUnique by id', async () => {
  const o = await prisma.order.create({ data: { customer: 7 } })
  assert.deepEqual(await prisma.order.findUnique({ where: { id: o.id } }), { id: o.id, customer: 7 })
})

test('prisma: orderBy id and id > x', async () => {
  const made = []
  for (let i = 0; i < 5; i++) made.push((await prisma.order.create({ data: { customer: 100 + i } })).id)
  const after = await prisma.order.findMany({ where: { id: { gt: made[1] } }, orderBy: { id: 'asc' } })
  const expected = (await sqlOn(db, 'SELECT id::text AS id FROM orders WHERE id > $1::sno ORDER BY id', [made[1]])).map((r) => r.id)
  assert.deepEqual(after.map((o) => o.id), expected)
  assert.deepEqual(after.slice(0, 3).map((o) => o.id), made.slice(2))
})

test('prisma: include the items (sno foreign key)', async () => {
  const o = await prisma.order.create({ data: { customer: 8, items: { create: [{}, {}] } } })
  const got = await prisma.order.findUnique({ where: { id: o.id }, include: { items: { orderBy: { id: 'asc' } } } })
  assert.equal(got.items.length, 2)
  got.items.forEach((i) => { assertId(i.id); assert.equal(i.orderId, o.id) })
  const item = await prisma.item.findFirst({ where: { orderId: o.id }, include: { order: true } })
  assert.equal(item.order.id, o.id)
})

test('prisma: sno_time(id) in $queryRaw (the README\'s block)', async () => {
  const { before, after, since } = await timeFixture(db)
  // The README's block, as printed, in a function of `since` that returns its `recent`.
  const file = write(dir, 'time.js', "import { prisma } from './db.js'\n" +
    `export async function recentSince (since) {\n${block('prisma-time', 'js')}return recent\n}\n`)
  const rows = await (await importFile(file)).recentSince(since)
  assert.equal(rows.length > 0, true)
  const ids = rows.map((r) => r.id)
  assert.ok(ids.includes(after) && !ids.includes(before))
  assert.deepEqual(ids, await idsSince(db, since))
})

test('prisma: createManyAndReturn of 1,000 orders', async () => {
  const rows = await prisma.order.createManyAndReturn({ data: Array.from({ length: 1000 }, (_, i) => ({ customer: 10000 + i })) })
  await assertBulk(db, rows.map((r) => r.id), 1000)
  const { count } = await prisma.order.createMany({ data: Array.from({ length: 1000 }, () => ({ customer: 20000 })) })
  assert.equal(count, 1000)
  assert.equal(await prisma.order.count({ where: { customer: 20000 } }), 1000)
})

for (const bad of BAD_IDS) {
  test(`prisma: a bad id ${JSON.stringify(bad)} is P2007 carrying the server's 22P02`, async () => {
    for (const q of [
      () => prisma.order.findUnique({ where: { id: bad } }),
      () => prisma.item.create({ data: { orderId: bad } }),
    ]) {
      const e = await rejection(q)
      assert.equal(e.constructor.name, 'PrismaClientKnownRequestError')
      assert.equal(e.code, 'P2007')
      const cause = e.meta.driverAdapterError.cause
      assert.equal(cause.originalCode, '22P02')
      assert.equal(cause.originalMessage, `invalid input syntax for type sno: "${bad}"`)
    }
  })
}
