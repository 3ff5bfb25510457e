/// The work one document's check may do, in units of PCRE2's match counter (one step of a
/// match, tens of nanoseconds): every subschema applied and every pattern matched draws on it,
/// so no schema and no document make a check run for long, whatever they hold. A check that
/// runs out fails with that reason (``SchemaViolation/overBudgetKeyword``): the server refuses
/// the document, the agent holds the save, as for any other violation.
public struct CheckBudget: Sendable {
    /// A document's whole check: about 0.12 s on this project's machine for the costliest work
    /// (a pattern backtracking at every step, ~12 ns a unit); a document of ten thousand strings
    /// under an ordinary pattern uses under a tenth of it (`ordinaryWorkStaysFarInsideTheBudget`).
    public static let perDocument = 10_000_000
    /// The most one match may take, however much the budget has left (~25 ms).
    static let perMatch = 2_000_000
    /// What applying one subschema is charged.
    static let perEvaluation = 8

    /// The limit a match is first tried with, and what it is charged when it ends within it:
    /// enough for a pattern that does not backtrack (PCRE2 counts a step for each place it may
    /// come back to, and each start position), small beside the whole budget.
    static func firstTry(_ bytes: Int) -> Int { 32 + 4 * bytes }

    public private(set) var remaining: Int

    public init(_ units: Int = CheckBudget.perDocument) { remaining = units }

    mutating func charge(_ units: Int) { remaining -= units }

    var isSpent: Bool { remaining <= 0 }
}
