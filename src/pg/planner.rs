//! Time predicates on the key: a planner hook that adds, next to each `sno_time(id) op t`
//! in a WHERE or JOIN ... ON clause, the bound on `id` it implies (`id >= sno_lower_bound(t)`,
//! `id <= sno_upper_bound(t)`, [`crate::id::time::Comparison::implied_bounds`]). The original
//! predicate stays, so results are exact; the bounds are lossy (a whole 4 ms unit, both
//! tick-tock timelines, every partition). With them the planner scans a btree or BRIN index
//! on `id` and prunes range partitions on `id`: at plan time for constants, at run time for
//! `now()` and parameters.
//!
//! Why a hook and not a support function on `sno_time`: PostgreSQL asks a
//! `SupportRequestIndexCondition` only of the function of the *operator*
//! (`timestamptz_ge`, built in) and only when one operand is the index key itself, and
//! partition pruning looks at no support function at all. The implied clause, added before
//! planning, serves both.
//!
//! Only what is certain and useful is added: the operand `t` has no column (a constant, a
//! parameter, `now()`...: the bound is then a restriction an index scan or pruning can use),
//! no volatile function and no subquery; the argument of `sno_time` has neither of the last
//! two; the comparison is one of `< <= = >= >` between timestamptz, date or timestamp (a date
//! or timestamp bound converts as the comparison does, overflow included); the clause is not
//! in the ON of a FULL JOIN; and `sno_time`, the bound functions and the operators are the
//! members of the extension `sno`. Anything else is left as written.
//!
//! The other way, on TimescaleDB hypertables only ([`crate::pg::hypertable`]): next to
//! `id op X` on a hypertable whose chunks are cut by `sno_time(id)`, with `X` known only when the
//! query runs (`now()`, a parameter of a generic plan), the comparison of times it implies
//! (`sno_time(id) >= sno_time(X)`, [`Comparison::implied_time_comparison`]): TimescaleDB excludes
//! chunks at executor startup by `sno_time` comparisons only. With a constant `X` TimescaleDB
//! excludes chunks itself, and the added clause would only lower the row estimate, so none is
//! added; nor on any other relation. No loop: a time comparison between two `sno_time` calls
//! gets no bound on `id`, and a comparison with a bound function's result no time comparison.

use crate::id::time::Comparison;
use core::ffi::c_void;
use core::ptr::null_mut;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, Node, NodeTag, Oid};

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;

/// Installs the hook (from `_PG_init`, in every process that loads the library).
pub fn init() {
    // SAFETY: _PG_init runs once per process, before any planning with this library.
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const core::ffi::c_char,
    cursor_options: core::ffi::c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    let mut cat = None;
    rewrite_query(parse, &mut cat);
    match PREV_PLANNER {
        Some(prev) => prev(parse, query_string, cursor_options, bound_params),
        None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
    }
}

/// The objects of the extension the added clauses use, looked up in the schema of the
/// `sno_time` found (once per query, only when one is found).
#[derive(Clone, Copy)]
struct Catalog {
    sno_time: Oid,
    /// `sno_lower_bound` and `sno_upper_bound` of timestamptz, date and timestamp ([`OPERAND_TYPES`]).
    lower: [Oid; 3],
    upper: [Oid; 3],
    ge: Oid,
    le: Oid,
    sno_type: Oid,
    /// The functions of sno's `<`, `<=`, `=`, `>=`, `>` between IDs (the order of [`CMP`]).
    sno_cmp: [Oid; 5],
    /// `<=`, `=` and `>=` between timestamptz (PostgreSQL's).
    tz_le: Oid,
    tz_eq: Oid,
    tz_ge: Oid,
    /// sno's schema.
    nsp: Oid,
}

/// The comparisons of [`Catalog::sno_cmp`], in its order.
const CMP: [Comparison; 5] = [
    Comparison::Lt,
    Comparison::Le,
    Comparison::Eq,
    Comparison::Ge,
    Comparison::Gt,
];
/// The names of sno's comparison functions between IDs, in the order of [`CMP`].
const CMP_FUNCS: [&core::ffi::CStr; 5] = [c"sno_lt", c"sno_le", c"sno_eq", c"sno_ge", c"sno_gt"];

/// The types a bound function takes, in the order of [`Catalog::lower`].
const OPERAND_TYPES: [Oid; 3] = [
    pg_sys::TIMESTAMPTZOID,
    pg_sys::DATEOID,
    pg_sys::TIMESTAMPOID,
];

/// The cells of a PostgreSQL list (empty for NIL).
unsafe fn cells<'a>(list: *mut pg_sys::List) -> &'a [pg_sys::ListCell] {
    if list.is_null() {
        &[]
    } else {
        core::slice::from_raw_parts((*list).elements, (*list).length as usize)
    }
}

unsafe fn tag(n: *const Node) -> NodeTag {
    if n.is_null() {
        NodeTag::T_Invalid
    } else {
        (*n).type_
    }
}

unsafe fn rewrite_query(q: *mut pg_sys::Query, cat: &mut Option<Catalog>) {
    if q.is_null() {
        return;
    }
    rewrite_jointree((*q).jointree.cast(), cat, (*q).rtable);
    for c in cells((*q).rtable) {
        let rte = c.ptr_value as *mut pg_sys::RangeTblEntry;
        if (*rte).rtekind == pg_sys::RTEKind::RTE_SUBQUERY {
            rewrite_query((*rte).subquery, cat);
        }
    }
    for c in cells((*q).cteList) {
        let cte = c.ptr_value as *mut pg_sys::CommonTableExpr;
        if tag((*cte).ctequery) == NodeTag::T_Query {
            rewrite_query((*cte).ctequery.cast(), cat);
        }
    }
}

unsafe fn rewrite_jointree(n: *mut Node, cat: &mut Option<Catalog>, rtable: *mut pg_sys::List) {
    match tag(n) {
        NodeTag::T_FromExpr => {
            let f = n as *mut pg_sys::FromExpr;
            (*f).quals = rewrite_quals((*f).quals, cat, rtable);
            for c in cells((*f).fromlist) {
                rewrite_jointree(c.ptr_value.cast(), cat, rtable);
            }
        }
        NodeTag::T_JoinExpr => {
            let j = n as *mut pg_sys::JoinExpr;
            // A FULL JOIN accepts only merge- or hash-joinable conditions besides its own.
            if (*j).jointype != pg_sys::JoinType::JOIN_FULL {
                (*j).quals = rewrite_quals((*j).quals, cat, rtable);
            }
            rewrite_jointree((*j).larg, cat, rtable);
            rewrite_jointree((*j).rarg, cat, rtable);
        }
        _ => {}
    }
}

/// The conjuncts of a qualification (the arguments of a top-level AND, or itself).
unsafe fn conjuncts(quals: *mut Node, out: &mut Vec<*mut Node>) {
    if tag(quals) == NodeTag::T_BoolExpr {
        let b = quals as *mut pg_sys::BoolExpr;
        if (*b).boolop == pg_sys::BoolExprType::AND_EXPR {
            for c in cells((*b).args) {
                conjuncts(c.ptr_value.cast(), out);
            }
            return;
        }
    }
    if !quals.is_null() {
        out.push(quals);
    }
}

/// The qualification with the implied bounds added (itself when there are none).
unsafe fn rewrite_quals(
    quals: *mut Node,
    cat: &mut Option<Catalog>,
    rtable: *mut pg_sys::List,
) -> *mut Node {
    let mut parts = Vec::new();
    conjuncts(quals, &mut parts);
    let mut added = Vec::new();
    let timescaledb = crate::pg::hypertable::timescaledb_loaded();
    for &p in &parts {
        implied(p, cat, &mut added);
        if timescaledb {
            implied_time(p, cat, rtable, &mut added);
        }
    }
    // A bound the query already has is not added again: a query planned twice (Citus plans
    // on the coordinator, deparses the planned query, bounds included, for each shard, and the
    // worker plans it again) keeps one copy of each, as a query on one server has. The copy it
    // has may be folded already (`id >= '...'::sno` for a constant time): so is ours, to compare.
    added.retain(|&n| {
        let folded =
            pg_sys::eval_const_expressions(null_mut(), pg_sys::copyObjectImpl(n.cast()).cast());
        !parts.iter().any(|&p| {
            pg_sys::equal(p.cast_const().cast(), n.cast_const().cast())
                || pg_sys::equal(p.cast_const().cast(), folded.cast_const().cast())
        })
    });
    if added.is_empty() {
        return quals;
    }
    let mut args: *mut pg_sys::List = null_mut();
    for n in parts.into_iter().chain(added) {
        args = pg_sys::lappend(args, n.cast());
    }
    pg_sys::makeBoolExpr(pg_sys::BoolExprType::AND_EXPR, args, -1).cast()
}

/// How a comparison function compares (the function of the operator): the comparison, and
/// the type of the operand that is not the ID's time, for each side the time can be on.
fn comparison(func: u32) -> Option<(Comparison, bool, Oid)> {
    use pg_sys::*;
    use Comparison::*;
    let tz = TIMESTAMPTZOID;
    // (function, comparison, time on the left, the other operand's type)
    let table: [(u32, Comparison, bool, Oid); 25] = [
        (F_TIMESTAMPTZ_LT, Lt, true, tz),
        (F_TIMESTAMPTZ_LE, Le, true, tz),
        (F_TIMESTAMPTZ_EQ, Eq, true, tz),
        (F_TIMESTAMPTZ_GE, Ge, true, tz),
        (F_TIMESTAMPTZ_GT, Gt, true, tz),
        (F_TIMESTAMPTZ_LT_DATE, Lt, true, DATEOID),
        (F_TIMESTAMPTZ_LE_DATE, Le, true, DATEOID),
        (F_TIMESTAMPTZ_EQ_DATE, Eq, true, DATEOID),
        (F_TIMESTAMPTZ_GE_DATE, Ge, true, DATEOID),
        (F_TIMESTAMPTZ_GT_DATE, Gt, true, DATEOID),
        (F_DATE_LT_TIMESTAMPTZ, Lt, false, DATEOID),
        (F_DATE_LE_TIMESTAMPTZ, Le, false, DATEOID),
        (F_DATE_EQ_TIMESTAMPTZ, Eq, false, DATEOID),
        (F_DATE_GE_TIMESTAMPTZ, Ge, false, DATEOID),
        (F_DATE_GT_TIMESTAMPTZ, Gt, false, DATEOID),
        (F_TIMESTAMPTZ_LT_TIMESTAMP, Lt, true, TIMESTAMPOID),
        (F_TIMESTAMPTZ_LE_TIMESTAMP, Le, true, TIMESTAMPOID),
        (F_TIMESTAMPTZ_EQ_TIMESTAMP, Eq, true, TIMESTAMPOID),
        (F_TIMESTAMPTZ_GE_TIMESTAMP, Ge, true, TIMESTAMPOID),
        (F_TIMESTAMPTZ_GT_TIMESTAMP, Gt, true, TIMESTAMPOID),
        (F_TIMESTAMP_LT_TIMESTAMPTZ, Lt, false, TIMESTAMPOID),
        (F_TIMESTAMP_LE_TIMESTAMPTZ, Le, false, TIMESTAMPOID),
        (F_TIMESTAMP_EQ_TIMESTAMPTZ, Eq, false, TIMESTAMPOID),
        (F_TIMESTAMP_GE_TIMESTAMPTZ, Ge, false, TIMESTAMPOID),
        (F_TIMESTAMP_GT_TIMESTAMPTZ, Gt, false, TIMESTAMPOID),
    ];
    table
        .iter()
        .find(|r| r.0 == func)
        .map(|&(_, c, left, other)| (c, left, other))
}

/// If `clause` is a comparison of `sno_time(x)` with a usable operand, pushes the clauses
/// on `x` it implies.
unsafe fn implied(clause: *mut Node, cat: &mut Option<Catalog>, out: &mut Vec<*mut Node>) {
    if tag(clause) != NodeTag::T_OpExpr {
        return;
    }
    let op = clause as *mut pg_sys::OpExpr;
    let args = cells((*op).args);
    if args.len() != 2 {
        return;
    }
    let Some((cmp, fixed_left, other_type)) = comparison(pg_sys::get_opcode((*op).opno).to_u32())
    else {
        return;
    };
    // For timestamptz on both sides the time may be either operand.
    let (a, b) = (
        args[0].ptr_value as *mut Node,
        args[1].ptr_value as *mut Node,
    );
    let candidates: &[(bool, *mut Node, *mut Node)] = if other_type == pg_sys::TIMESTAMPTZOID {
        &[(true, a, b), (false, b, a)]
    } else if fixed_left {
        &[(true, a, b)]
    } else {
        &[(false, b, a)]
    };
    for &(time_on_left, time, other) in candidates {
        let Some(x) = sno_time_argument(time, cat) else {
            continue;
        };
        let Some(c) = *cat else { return };
        // A column in `t` would make the bound a join clause: no index or pruning uses it,
        // and its estimate would be multiplied into the join's. A comparison of two IDs' times
        // (one this hook added on a hypertable, or written so) is left alone: no loop.
        if pg_sys::contain_var_clause(other)
            || !usable(other)
            || !usable(x)
            || sno_time_argument(other, cat).is_some()
        {
            return;
        }
        let Some(k) = OPERAND_TYPES.iter().position(|&ty| ty == other_type) else {
            return;
        };
        let (lower, upper) = cmp.implied_bounds(time_on_left);
        if lower {
            out.push(bound(&c, c.ge, c.lower[k], x, other));
        }
        if upper {
            out.push(bound(&c, c.le, c.upper[k], x, other));
        }
        return;
    }
}

/// Neither volatile nor holding a subquery: evaluating it once more (in the bound) gives the
/// same value as in the comparison.
unsafe fn usable(n: *mut Node) -> bool {
    !pg_sys::contain_volatile_functions(n) && !pg_sys::contain_subplans(n)
}

/// `x` if `n` is `sno_time(x)` with the extension's `sno_time`, looking up the catalog the
/// first time one is found.
unsafe fn sno_time_argument(n: *mut Node, cat: &mut Option<Catalog>) -> Option<*mut Node> {
    if tag(n) != NodeTag::T_FuncExpr {
        return None;
    }
    let f = n as *mut pg_sys::FuncExpr;
    let args = cells((*f).args);
    if args.len() != 1 || (*f).funcresulttype != pg_sys::TIMESTAMPTZOID {
        return None;
    }
    if let Some(c) = cat {
        return (c.sno_time == (*f).funcid).then(|| args[0].ptr_value.cast());
    }
    // sno_time by name, then as a member of the extension sno: no other function qualifies.
    let name = pg_sys::get_func_name((*f).funcid);
    if name.is_null() || core::ffi::CStr::from_ptr(name) != c"sno_time" {
        return None;
    }
    *cat = lookup((*f).funcid, pg_sys::exprType(args[0].ptr_value.cast()));
    cat.map(|_| args[0].ptr_value.cast())
}

/// The bound functions and comparison operators in the schema of `sno_time`, each a member of
/// the extension `sno` as `sno_time` is (a function someone else created under one of these
/// names is never called); `None` when a database still has a version without them (before
/// `ALTER EXTENSION sno UPDATE`).
unsafe fn lookup(sno_time: Oid, sno_type: Oid) -> Option<Catalog> {
    let ext = pg_sys::get_extension_oid(c"sno".as_ptr(), true);
    let member = |class: Oid, oid: Oid| {
        oid != pg_sys::InvalidOid && pg_sys::getExtensionOfObject(class, oid) == ext
    };
    if ext == pg_sys::InvalidOid || !member(pg_sys::ProcedureRelationId, sno_time) {
        return None;
    }
    // Straight from the system caches, in the schema of sno_time: a lookup by qualified
    // name would check the current user's USAGE on that schema, which a query through
    // another role's view over it does not need (and the bounds need only EXECUTE).
    let nsp = pg_sys::get_func_namespace(sno_time);
    let func = |s: &core::ffi::CStr, ty: Oid| {
        let f = proc_in(nsp, s, &[ty]);
        member(pg_sys::ProcedureRelationId, f).then_some(f)
    };
    let op = |s: &core::ffi::CStr| {
        let o = oper_in(nsp, s, sno_type);
        member(pg_sys::OperatorRelationId, o).then_some(o)
    };
    let mut lower = [pg_sys::InvalidOid; 3];
    let mut upper = [pg_sys::InvalidOid; 3];
    for (k, &ty) in OPERAND_TYPES.iter().enumerate() {
        lower[k] = func(c"sno_lower_bound", ty)?;
        upper[k] = func(c"sno_upper_bound", ty)?;
    }
    let mut sno_cmp = [pg_sys::InvalidOid; 5];
    for (k, name) in CMP_FUNCS.iter().enumerate() {
        let f = proc_in(nsp, name, &[sno_type, sno_type]);
        sno_cmp[k] = member(pg_sys::ProcedureRelationId, f).then_some(f)?;
    }
    let catalog = pg_sys::Oid::from(pg_sys::PG_CATALOG_NAMESPACE);
    let tz = |s: &core::ffi::CStr| {
        let o = oper_in(catalog, s, pg_sys::TIMESTAMPTZOID);
        (o != pg_sys::InvalidOid).then_some(o)
    };
    Some(Catalog {
        sno_time,
        lower,
        upper,
        ge: op(c">=")?,
        le: op(c"<=")?,
        sno_type,
        sno_cmp,
        tz_le: tz(c"<=")?,
        tz_eq: tz(c"=")?,
        tz_ge: tz(c">=")?,
        nsp,
    })
}

/// If `clause` compares a `sno` column of a TimescaleDB hypertable cut by its `sno_time` with an
/// operand known only at execution, pushes the comparison of their times it implies
/// (`sno_time(id) >= sno_time(X)` for `id > X`).
unsafe fn implied_time(
    clause: *mut Node,
    cat: &mut Option<Catalog>,
    rtable: *mut pg_sys::List,
    out: &mut Vec<*mut Node>,
) {
    if tag(clause) != NodeTag::T_OpExpr {
        return;
    }
    let op = clause as *mut pg_sys::OpExpr;
    let args = cells((*op).args);
    if args.len() != 2 {
        return;
    }
    let (a, b) = (
        args[0].ptr_value as *mut Node,
        args[1].ptr_value as *mut Node,
    );
    if tag(a) != NodeTag::T_Var && tag(b) != NodeTag::T_Var {
        return;
    }
    let opfunc = pg_sys::get_opcode((*op).opno);
    if cat.is_none() {
        *cat = catalog_of_comparison(opfunc, if tag(a) == NodeTag::T_Var { a } else { b });
    }
    let Some(c) = *cat else { return };
    let Some(k) = c.sno_cmp.iter().position(|&f| f == opfunc) else {
        return;
    };
    for (var_on_left, var, other) in [(true, a, b), (false, b, a)] {
        if tag(var) != NodeTag::T_Var {
            continue;
        }
        let v = var as *mut pg_sys::Var;
        if (*v).varlevelsup != 0 || (*v).vartype != c.sno_type {
            continue;
        }
        // Not one of the bounds this hook adds (no loop); evaluated once more without harm.
        if pg_sys::contain_var_clause(other) || !usable(other) || bound_call(&c, other) {
            return;
        }
        let varno = (*v).varno;
        let rtes = cells(rtable);
        if varno < 1 || varno as usize > rtes.len() {
            return;
        }
        let rte = rtes[varno as usize - 1].ptr_value as *mut pg_sys::RangeTblEntry;
        if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || !(*rte).inh {
            return;
        }
        let schema = pg_sys::get_namespace_name(c.nsp);
        if schema.is_null() {
            return;
        }
        let Ok(schema) = core::ffi::CStr::from_ptr(schema).to_str() else {
            return;
        };
        if crate::pg::hypertable::sno_time_dimension((*rte).relid, schema) != Some((*v).varattno) {
            return;
        }
        // Known only when the query runs (now(), a parameter): what folding constants makes a
        // Const, TimescaleDB excludes chunks by itself.
        let folded = pg_sys::eval_const_expressions(
            null_mut(),
            pg_sys::copyObjectImpl(other as *const c_void).cast(),
        );
        if tag(folded) == NodeTag::T_Const {
            return;
        }
        let cmp = if var_on_left {
            CMP[k]
        } else {
            CMP[k].commuted()
        };
        let tz_op = match cmp.implied_time_comparison() {
            Comparison::Le => c.tz_le,
            Comparison::Eq => c.tz_eq,
            Comparison::Ge => c.tz_ge,
            Comparison::Lt | Comparison::Gt => return,
        };
        let clause = pg_sys::make_opclause(
            tz_op,
            pg_sys::BOOLOID,
            false,
            func(c.sno_time, pg_sys::TIMESTAMPTZOID, var).cast(),
            func(c.sno_time, pg_sys::TIMESTAMPTZOID, other).cast(),
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        (*(clause as *mut pg_sys::OpExpr)).opfuncid = pg_sys::get_opcode(tz_op);
        out.push(clause.cast());
        return;
    }
}

/// Whether `n` is a call of one of sno's bound functions (what [`implied`] adds).
unsafe fn bound_call(c: &Catalog, n: *mut Node) -> bool {
    if tag(n) != NodeTag::T_FuncExpr {
        return false;
    }
    let f = (*(n as *mut pg_sys::FuncExpr)).funcid;
    c.lower.contains(&f) || c.upper.contains(&f)
}

/// sno's catalog, when `func` is one of its comparison functions between IDs and `var` an ID:
/// found through `sno_time` in that function's schema.
unsafe fn catalog_of_comparison(func: Oid, var: *mut Node) -> Option<Catalog> {
    let name = pg_sys::get_func_name(func);
    if name.is_null() || !CMP_FUNCS.contains(&core::ffi::CStr::from_ptr(name)) {
        return None;
    }
    let sno_type = pg_sys::exprType(var);
    let sno_time = proc_in(pg_sys::get_func_namespace(func), c"sno_time", &[sno_type]);
    if sno_time == pg_sys::InvalidOid {
        return None;
    }
    lookup(sno_time, sno_type)
}

/// The function `name(types)` of schema `nsp`, straight from the system cache (InvalidOid if none).
unsafe fn proc_in(nsp: Oid, name: &core::ffi::CStr, types: &[Oid]) -> Oid {
    let args = pg_sys::buildoidvector(types.as_ptr(), types.len() as _);
    pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as _,
        pg_sys::Anum_pg_proc_oid as _,
        pg_sys::Datum::from(name.as_ptr()),
        pg_sys::Datum::from(args),
        pg_sys::Datum::from(nsp),
        pg_sys::Datum::from(0),
    )
}

/// The operator `name` between two values of type `ty`, of schema `nsp` (InvalidOid if none).
unsafe fn oper_in(nsp: Oid, name: &core::ffi::CStr, ty: Oid) -> Oid {
    pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::OPERNAMENSP as _,
        pg_sys::Anum_pg_operator_oid as _,
        pg_sys::Datum::from(name.as_ptr()),
        pg_sys::Datum::from(ty),
        pg_sys::Datum::from(ty),
        pg_sys::Datum::from(nsp),
    )
}

/// A call of `funcid` on one argument (a copy of it).
unsafe fn func(funcid: Oid, rettype: Oid, arg: *mut Node) -> *mut Node {
    let copy = pg_sys::copyObjectImpl(arg as *const c_void);
    pg_sys::makeFuncExpr(
        funcid,
        rettype,
        pg_sys::lappend(null_mut(), copy),
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
        pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
    )
    .cast()
}

/// `x op bound_fn(t)`.
unsafe fn bound(c: &Catalog, op: Oid, bound_fn: Oid, x: *mut Node, t: *mut Node) -> *mut Node {
    let key = pg_sys::copyObjectImpl(x as *const c_void);
    let clause = pg_sys::make_opclause(
        op,
        pg_sys::BOOLOID,
        false,
        key.cast(),
        func(bound_fn, c.sno_type, t).cast(),
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
    );
    (*(clause as *mut pg_sys::OpExpr)).opfuncid = pg_sys::get_opcode(op);
    clause.cast()
}
