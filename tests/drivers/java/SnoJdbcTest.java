// pgjdbc (Debian's libpostgresql-jdbc-java, /usr/share/java/postgresql.jar) against a real
// PostgreSQL server with the sno extension, run by tests/client/drivers_java.sh:
//
//   javac -cp /usr/share/java/postgresql.jar -d OUT SnoJdbcTest.java
//   java -cp /usr/share/java/postgresql.jar:OUT SnoJdbcTest 'jdbc:postgresql://127.0.0.1:PORT/DB?user=postgres'
//
// (the database must have CREATE EXTENSION sno; pgjdbc needs TCP). Each case of issue 9 is one
// method: what works out of the box, the recipe where something does not (between `RECIPE` and
// `END RECIPE`, the text RECIPES.md proposes for the README), and each trap asserted to behave as
// documented, so that a driver release that changes it fails here and the README gets updated.
// Prints one ok:/FAIL: line per case and exits 1 when any failed.
//
// The IDs are checked against the server's own view of them: the program decodes the
// 16-character text itself (the README's alphabet and layout) and compares the fields with
// sno_time, sno_meta, sno_partition, sno_sequence and sno_tick, and the bytes with id::bytea.

import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.postgresql.util.PGobject;

public class SnoJdbcTest {
    // --- sno in Java, for the checks (not a recipe) ------------------------------------------

    static final String ALPHABET = "23456789abcdefghijklmnopqrstuvwx";
    static final long EPOCH_MS = 1262304000000L; // 2010-01-01T00:00:00Z

    /** 16 characters -> the 10 bytes (5 bits per character, big-endian). */
    static byte[] decode(String text) {
        check(text != null && text.matches("[2-9a-x]{16}"), "sno text: " + text);
        java.math.BigInteger n = java.math.BigInteger.ZERO;
        for (char c : text.toCharArray()) {
            n = n.shiftLeft(5).or(java.math.BigInteger.valueOf(ALPHABET.indexOf(c)));
        }
        byte[] b = n.toByteArray(), out = new byte[10];
        int k = Math.min(b.length, 10);
        System.arraycopy(b, b.length - k, out, 10 - k, k);
        return out;
    }

    /** The 10 bytes -> 16 characters. */
    static String encode(byte[] b) {
        check(b.length == 10, "10 bytes");
        java.math.BigInteger n = new java.math.BigInteger(1, b);
        char[] s = new char[16];
        for (int i = 15; i >= 0; i--, n = n.shiftRight(5)) s[i] = ALPHABET.charAt(n.intValue() & 31);
        return new String(s);
    }

    /** A client-made ID: now, floored to 4 ms, with these fields. */
    static byte[] make(int meta, int partition, int sequence) {
        long t = (System.currentTimeMillis() - EPOCH_MS) / 4 * 2; // 39-bit units, tick 0
        byte[] b = new byte[10];
        for (int i = 4; i >= 0; i--, t >>>= 8) b[i] = (byte) t;
        b[5] = (byte) meta;
        b[6] = (byte) (partition >> 8);
        b[7] = (byte) partition;
        b[8] = (byte) (sequence >> 8);
        b[9] = (byte) sequence;
        return b;
    }

    /** time ms, tick, meta, partition, sequence of the 10 bytes. */
    static List<Long> fields(byte[] b) {
        long t = 0;
        for (int i = 0; i < 5; i++) t = (t << 8) | (b[i] & 0xff);
        return List.of(EPOCH_MS + (t >>> 1) * 4, t & 1, (long) (b[5] & 0xff),
                (long) (((b[6] & 0xff) << 8) | (b[7] & 0xff)), (long) (((b[8] & 0xff) << 8) | (b[9] & 0xff)));
    }

    static String hex(byte[] b) { return b == null ? "null" : HexFormat.of().formatHex(b); }

    // The README's example, with bytes >= 0x80.
    static final String GO_TEXT = "brpk4q72xwf2m63l";
    static final byte[] GO_BYTES = HexFormat.of().parseHex("4e6f2160a0ff9a0a1033");

    // --- checks --------------------------------------------------------------------------------

    static final class CheckFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CheckFailed(String m) { super(m); }
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new CheckFailed(what);
    }

    static void eq(Object got, Object want, String what) {
        boolean same = (got instanceof byte[] g && want instanceof byte[] w) ? Arrays.equals(g, w)
                : (got instanceof Object[] g2 && want instanceof Object[] w2) ? Arrays.deepEquals(g2, w2)
                : Objects.equals(got, want);
        if (!same) throw new CheckFailed(what + ": got " + show(got) + ", want " + show(want));
    }

    static String show(Object o) {
        if (o instanceof byte[] b) return "bytes " + hex(b);
        if (o instanceof Object[] a) return Arrays.deepToString(a);
        return String.valueOf(o);
    }

    interface Step { void run() throws Exception; }

    /** Runs step, which must fail with this SQLSTATE and a message containing this text. */
    static void fails(String sqlState, String message, Step step) throws Exception {
        try {
            step.run();
        } catch (SQLException e) {
            eq(e.getSQLState(), sqlState, "SQLSTATE of: " + e.getMessage());
            check(e.getMessage().contains(message), "message '" + e.getMessage() + "' contains '" + message + "'");
            return;
        }
        throw new CheckFailed("no error (want SQLSTATE " + sqlState + ": " + message + ")");
    }

    // --- the connection and helpers ------------------------------------------------------------

    static String url;
    static Connection conn;

    static String one(String sql, Object... params) throws SQLException {
        try (PreparedStatement p = conn.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) p.setObject(i + 1, params[i]);
            try (ResultSet r = p.executeQuery()) {
                check(r.next(), "a row from " + sql);
                return r.getString(1);
            }
        }
    }

    /** What the server says of the ID with this text, compared with what the program decodes. */
    static void serverAgrees(String text) throws SQLException {
        try (PreparedStatement p = conn.prepareStatement(
                "SELECT id::bytea, (extract(epoch FROM sno_time(id)) * 1000)::bigint, sno_tick(id), sno_meta(id),"
                        + " sno_partition(id), sno_sequence(id) FROM (SELECT ?::text::sno AS id) s")) {
            p.setString(1, text);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                byte[] bytes = decode(text);
                eq(r.getBytes(1), bytes, "id::bytea of " + text);
                List<Long> server = List.of(r.getLong(2), r.getLong(3), r.getLong(4), r.getLong(5), r.getLong(6));
                eq(server, fields(bytes), "sno_time/sno_tick/sno_meta/sno_partition/sno_sequence of " + text);
            }
        }
    }

    static String noteOf(String text) throws SQLException {
        return one("SELECT note FROM jdbc_orders WHERE id = ?::text::sno", text);
    }

    // --- the cases -----------------------------------------------------------------------------

    static void encoder() {
        eq(encode(GO_BYTES), GO_TEXT, "encode");
        eq(decode(GO_TEXT), GO_BYTES, "decode");
    }

    static void insertDefault() throws Exception {
        // RECIPE java: default
        PreparedStatement ps = conn.prepareStatement("INSERT INTO jdbc_orders (note) VALUES (?) RETURNING id");
        ps.setString(1, "default");
        ResultSet rs = ps.executeQuery();
        rs.next();
        String id = rs.getString(1); // such as "9q8xsxm42782a222"
        // END RECIPE
        serverAgrees(id);
        eq(fields(decode(id)).get(2), 1L, "meta of sno_generate(1)");
        // getObject: a PGobject of type sno holding the text.
        Object o = rs.getObject(1);
        check(o instanceof PGobject, "getObject is a PGobject: " + o.getClass());
        eq(((PGobject) o).getType(), "sno", "PGobject type");
        eq(((PGobject) o).getValue(), id, "PGobject value");
        eq(noteOf(id), "default", "the row");
    }

    static void setStringWorks() throws Exception {
        // sno 0.4.0: setString (a varchar parameter) goes into a sno column (the assignment cast)
        // and compares with one (the sno-text operators); a bad string is sno's input error.
        String text = encode(make(7, 4242, 1));
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO jdbc_orders (id, note) VALUES (?, 'setString')")) {
            ps.setString(1, text);
            eq(ps.executeUpdate(), 1, "INSERT with setString");
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?")) {
            ps.setString(1, text.toUpperCase());
            try (ResultSet r = ps.executeQuery()) {
                eq(r.next() ? r.getString(1) : null, "setString", "WHERE id = ? with setString");
            }
        }
        fails("22P02", "invalid input syntax for type sno", () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?")) {
                ps.setString(1, text.substring(1));
                ps.executeQuery();
            }
        });
    }

    static void setObjectOther() throws Exception {
        String id = encode(make(7, 4242, 2));
        // RECIPE java: text parameter
        PreparedStatement ps = conn.prepareStatement("INSERT INTO jdbc_orders (id, note) VALUES (?, ?)");
        ps.setObject(1, id, Types.OTHER); // untyped: read as a sno; the same in WHERE id = ?
        ps.setString(2, "text");
        ps.executeUpdate();
        // END RECIPE
        ps.close();
        serverAgrees(id);
        eq(noteOf(id), "text", "the row");
        // The same with a PGobject.
        PGobject o = new PGobject();
        o.setType("sno");
        o.setValue(GO_TEXT);
        try (PreparedStatement p = conn.prepareStatement("SELECT ?::text")) {
            p.setObject(1, o);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                eq(r.getString(1), GO_TEXT, "a PGobject parameter");
            }
        }
    }

    static void stringtypeUnspecified() throws Exception {
        String id = encode(make(7, 4242, 3));
        // RECIPE java: stringtype=unspecified
        // jdbc:postgresql://host/db?stringtype=unspecified : every setString is sent untyped
        Connection c = DriverManager.getConnection(url + "&stringtype=unspecified");
        PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_orders (id, note) VALUES (?, ?)");
        ps.setString(1, id);
        ps.setString(2, "unspecified");
        ps.executeUpdate();
        // END RECIPE
        try (PreparedStatement w = c.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?")) {
            w.setString(1, id);
            try (ResultSet r = w.executeQuery()) {
                r.next();
                eq(r.getString(1), "unspecified", "setString in WHERE with stringtype=unspecified");
            }
        }
        // The bytea hex text form is sno text input too.
        try (PreparedStatement w = c.prepareStatement("SELECT ?::sno")) {
            w.setString(1, "\\x" + hex(GO_BYTES));
            try (ResultSet r = w.executeQuery()) {
                r.next();
                eq(r.getString(1), GO_TEXT, "\\x + 20 hex digits");
            }
        }
        ps.close();
        c.close();
        serverAgrees(id);
    }

    static void castInSql() throws Exception {
        // setString with the cast written in SQL: works too (varchar -> sno is an explicit I/O cast).
        try (PreparedStatement ps = conn.prepareStatement("SELECT ?::sno::text, CAST(? AS sno)::text")) {
            ps.setString(1, GO_TEXT);
            ps.setString(2, GO_TEXT.toUpperCase());
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                eq(r.getString(1), GO_TEXT, "?::sno");
                eq(r.getString(2), GO_TEXT, "CAST(? AS sno)");
            }
        }
    }

    static void setBytes() throws Exception {
        byte[] raw = make(7, 4242, 4);
        // RECIPE java: raw bytes parameter
        PreparedStatement ps = conn.prepareStatement("INSERT INTO jdbc_orders (id, note) VALUES (?, ?)");
        ps.setBytes(1, raw); // bytea; INSERT and UPDATE SET cast it (an assignment cast)
        ps.setString(2, "bytes");
        ps.executeUpdate();
        // elsewhere write sno(?):  ... WHERE id = sno(?)
        // END RECIPE
        ps.close();
        serverAgrees(encode(raw));
        eq(noteOf(encode(raw)), "bytes", "the row");
        try (PreparedStatement w = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = sno(?)")) {
            w.setBytes(1, raw);
            try (ResultSet r = w.executeQuery()) {
                r.next();
                eq(r.getString(1), "bytes", "WHERE id = sno(?) with setBytes");
            }
        }
        byte[] raw2 = make(7, 4242, 5);
        try (PreparedStatement u = conn.prepareStatement("UPDATE jdbc_orders SET id = ? WHERE id = sno(?)")) {
            u.setBytes(1, raw2);
            u.setBytes(2, raw);
            eq(u.executeUpdate(), 1, "UPDATE ... SET id = ? with setBytes");
        }
        eq(noteOf(encode(raw2)), "bytes", "the row after the UPDATE");
        fails("42883", "operator does not exist: sno = bytea", () -> {
            try (PreparedStatement w = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?")) {
                w.setBytes(1, raw);
                w.executeQuery();
            }
        });
        fails("22P03", "invalid length for type sno: bytea value", () -> {
            try (PreparedStatement w = conn.prepareStatement("INSERT INTO jdbc_orders (id) VALUES (?)")) {
                w.setBytes(1, new byte[11]);
                w.executeUpdate();
            }
        });
    }

    static void read() throws Exception {
        try (Statement s = conn.createStatement()) {
            s.execute("INSERT INTO jdbc_orders (id, note) VALUES ('" + GO_TEXT + "', 'go')");
        }
        // RECIPE java: read
        PreparedStatement ps = conn.prepareStatement("SELECT id, id::bytea FROM jdbc_orders WHERE note = ?");
        ps.setString(1, "go");
        ResultSet rs = ps.executeQuery();
        rs.next();
        String id = rs.getString(1); // "brpk4q72xwf2m63l"
        byte[] raw = rs.getBytes(2); // the 10 bytes; NOT rs.getBytes(1): that is the 16 characters
        // END RECIPE
        eq(id, GO_TEXT, "getString");
        eq(raw, GO_BYTES, "getBytes of id::bytea");
        // TRAP: getBytes of the sno column itself is the 16 characters of the text.
        eq(rs.getBytes(1), GO_TEXT.getBytes(StandardCharsets.US_ASCII), "getBytes of the sno column (text mode)");
        rs.close();
        // Still text once pgjdbc prepares the statement on the server (prepareThreshold, 5 by
        // default): sno is not among the types it reads in binary unless told (next case).
        for (int i = 0; i < 6; i++) {
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                eq(r.getString(1), GO_TEXT, "getString, execution " + (i + 2));
                eq(r.getBytes(1), GO_TEXT.getBytes(StandardCharsets.US_ASCII), "getBytes, execution " + (i + 2));
            }
        }
        ps.close();
    }

    static void binaryTransferTrap() throws Exception {
        // pgjdbc reads a type in binary only when told its OID (binaryTransferEnable) and the
        // statement is server-prepared (prepareThreshold; -1: at once). Then getBytes gives the 10
        // bytes, but getString silently gives null, and getObject a PGobject whose value is null.
        String oid = one("SELECT 'sno'::regtype::oid::text");
        try (Connection c = DriverManager.getConnection(url + "&prepareThreshold=-1&binaryTransferEnable=" + oid);
                PreparedStatement p = c.prepareStatement("SELECT id, id IS NULL FROM jdbc_orders WHERE id = ?")) {
            p.setObject(1, GO_TEXT, Types.OTHER);
            try (ResultSet r = p.executeQuery()) {
                check(r.next(), "the row");
                eq(r.getBytes(1), GO_BYTES, "getBytes in binary transfer");
                eq(r.getBoolean(2), false, "the value is not NULL");
                eq(r.getString(1), null, "getString in binary transfer (still null? else update the README)");
                Object o = r.getObject(1);
                check(o instanceof PGobject, "getObject is a PGobject: " + o);
                eq(((PGobject) o).getType(), "sno", "its type");
                eq(((PGobject) o).getValue(), null, "its value in binary transfer");
            }
        }
    }

    static void arrays() throws Exception {
        byte[] a = make(9, 1, 1);
        // RECIPE java: array parameter
        PreparedStatement ps = conn.prepareStatement("UPDATE jdbc_orders SET tags = ? WHERE note = ?");
        ps.setArray(1, conn.createArrayOf("sno", new String[] {GO_TEXT, encode(a), null}));
        ps.setString(2, "text");
        ps.executeUpdate();
        // ... WHERE id = ANY(?) with setArray(1, conn.createArrayOf("sno", ids)) likewise
        // END RECIPE
        ps.close();
        eq(one("SELECT tags::text FROM jdbc_orders WHERE note = 'text'"),
                "{" + GO_TEXT + "," + encode(a) + ",NULL}", "sno[] written");
        try (PreparedStatement p = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ANY(?) ORDER BY note")) {
            p.setArray(1, conn.createArrayOf("sno", new String[] {GO_TEXT, one("SELECT id FROM jdbc_orders WHERE note = 'bytes'")}));
            try (ResultSet r = p.executeQuery()) {
                List<String> notes = new ArrayList<>();
                while (r.next()) notes.add(r.getString(1));
                eq(notes, List.of("bytes", "go"), "WHERE id = ANY(createArrayOf(\"sno\", ...))");
            }
        }
        // A String[] through setObject is varchar[]: = ANY compares sno with text (0.4.0).
        try (PreparedStatement p = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ANY(?)")) {
            p.setObject(1, new String[] {GO_TEXT});
            try (ResultSet r = p.executeQuery()) {
                eq(r.next() ? r.getString(1) : null, "go", "WHERE id = ANY(setObject(String[]))");
            }
        }
        // The raw bytes: a byte[][] is bytea[], cast like setBytes (INSERT/UPDATE, or ?::sno[]).
        try (PreparedStatement p = conn.prepareStatement("UPDATE jdbc_orders SET tags = ? WHERE note = 'bytes'")) {
            p.setObject(1, new byte[][] {GO_BYTES, a});
            eq(p.executeUpdate(), 1, "UPDATE with a byte[][]");
        }
        eq(one("SELECT tags::text FROM jdbc_orders WHERE note = 'bytes'"), "{" + GO_TEXT + "," + encode(a) + "}",
                "sno[] written from byte[][]");
    }

    static void arrayResults() throws Exception {
        // RECIPE java: array result
        PreparedStatement ps = conn.prepareStatement("SELECT tags, tags::text[] FROM jdbc_orders WHERE note = ?");
        ps.setString(1, "text");
        ResultSet rs = ps.executeQuery();
        rs.next();
        Object[] tags = (Object[]) rs.getArray(1).getArray(); // PGobject elements (getValue() is the text)
        String[] texts = (String[]) rs.getArray(2).getArray(); // or select tags::text[] for a String[]
        // END RECIPE
        eq(tags.length, 3, "elements");
        check(tags[0] instanceof PGobject, "element class " + tags[0].getClass());
        eq(((PGobject) tags[0]).getType(), "sno", "element type");
        eq(((PGobject) tags[0]).getValue(), GO_TEXT, "element 1");
        eq(tags[2], null, "element 3 (NULL)");
        eq(texts[0], GO_TEXT, "tags::text[] element 1");
        eq(((PGobject) tags[1]).getValue(), texts[1], "element 2");
        eq(texts[2], null, "tags::text[] element 3");
        serverAgrees(texts[1]);
        rs.close();
        ps.close();
        // The README's reading example, as it is there (a plain Statement).
        // RECIPE java: reading example
        ResultSet rs2 = conn.createStatement().executeQuery("SELECT id, id::bytea, tags::text[] FROM jdbc_orders WHERE note = 'text'");
        rs2.next();
        String id = rs2.getString(1);
        byte[] raw2 = rs2.getBytes(2);
        String[] tags2 = (String[]) rs2.getArray(3).getArray();
        // END RECIPE
        eq(raw2, decode(id), "id::bytea");
        eq(tags2, texts, "tags::text[]");
        rs2.getStatement().close();
        // The raw bytes of each: tags::bytea[] gives a byte[][].
        try (Statement s = conn.createStatement();
                ResultSet r = s.executeQuery("SELECT tags::bytea[] FROM jdbc_orders WHERE note = 'text'")) {
            r.next();
            byte[][] raw = (byte[][]) r.getArray(1).getArray();
            eq(raw.length, 3, "tags::bytea[] elements");
            eq(raw[0], GO_BYTES, "tags::bytea[] element 1");
            eq(raw[1], decode(texts[1]), "tags::bytea[] element 2");
            eq(raw[2], null, "tags::bytea[] element 3");
        }
    }

    static void whereParameter() throws Exception {
        String id = one("SELECT id FROM jdbc_orders WHERE note = 'default'");
        // RECIPE java: WHERE
        PreparedStatement ps = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?");
        ps.setObject(1, id, Types.OTHER);
        ResultSet rs = ps.executeQuery();
        // END RECIPE
        check(rs.next(), "the row");
        eq(rs.getString(1), "default", "WHERE id = ? with setObject(..., Types.OTHER)");
        check(!rs.next(), "one row");
        ps.close();
        fails("22P02", "invalid input syntax for type sno", () -> {
            try (PreparedStatement p = conn.prepareStatement("SELECT note FROM jdbc_orders WHERE id = ?")) {
                p.setObject(1, "brpk4q72xwf2m63y", Types.OTHER);
                p.executeQuery();
            }
        });
    }

    // --- main ----------------------------------------------------------------------------------

    static int failed = 0, passed = 0;

    static void run(String name, Step step) {
        try {
            step.run();
            System.out.println("ok: pgjdbc: " + name);
            passed++;
        } catch (Throwable e) {
            System.out.println("FAIL: pgjdbc: " + name + ": " + e);
            failed++;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: SnoJdbcTest 'jdbc:postgresql://127.0.0.1:PORT/DB?user=postgres'");
            System.exit(2);
        }
        url = args[0];
        conn = DriverManager.getConnection(url);
        System.out.println("pgjdbc " + conn.getMetaData().getDriverVersion() + ", server "
                + conn.getMetaData().getDatabaseProductVersion());
        try (Statement s = conn.createStatement()) {
            s.execute("DROP TABLE IF EXISTS jdbc_orders");
            s.execute("CREATE TABLE jdbc_orders (id sno PRIMARY KEY DEFAULT sno_generate(1), note text, tags sno[])");
        }
        run("the program's own encoder agrees with the README example", SnoJdbcTest::encoder);
        run("DEFAULT sno_generate(1): RETURNING id read with getString; getObject is a PGobject (out of the box)",
                SnoJdbcTest::insertDefault);
        run("setString (varchar) in INSERT and WHERE (sno 0.4.0); a bad string is 22P02", SnoJdbcTest::setStringWorks);
        run("client-made ID as text: setObject(i, id, Types.OTHER) or a PGobject (recipe)", SnoJdbcTest::setObjectOther);
        run("client-made ID as text: setString with stringtype=unspecified (recipe)", SnoJdbcTest::stringtypeUnspecified);
        run("setString with ?::sno or CAST(? AS sno) in the SQL (recipe)", SnoJdbcTest::castInSql);
        run("client-made ID as 10 raw bytes: setBytes works in INSERT; WHERE needs sno(?) (recipe, trap)",
                SnoJdbcTest::setBytes);
        run("reading: getString; the 10 bytes with id::bytea; TRAP: getBytes of the column is the text", SnoJdbcTest::read);
        run("TRAP: binary transfer of sno (binaryTransferEnable): getBytes raw, getString null, getObject a PGobject of null",
                SnoJdbcTest::binaryTransferTrap);
        run("sno[] parameters: setArray(createArrayOf(\"sno\", String[])); byte[][] too; setObject(String[]) too",
                SnoJdbcTest::arrays);
        run("sno[] results: getArray() gives PGobject elements, tags::text[] a String[]", SnoJdbcTest::arrayResults);
        run("an ID as a WHERE parameter: setObject(i, id, Types.OTHER) (recipe)", SnoJdbcTest::whereParameter);
        conn.close();
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
