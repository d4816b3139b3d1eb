/**
 * Column names and SET lists of the change statement (store/change.ts, change-tasks.ts): the names
 * are written into the statement's text, so only plain lowercase names pass.
 */
const columnName = /^[a-z_]+$/;

/** The columns that a list of inserted or patched rows name, sorted (one statement text per set of columns). */
export function columnsOf(rows: Record<string, unknown>[]): string[] {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))].sort();
  for (const column of columns) if (!columnName.test(column)) throw new Error(`not a column name: ${column}`);
  return columns;
}

/**
 * The SET list of a compare-and-set UPDATE of several rows from their JSON patches (`input.patch`,
 * read as `patched`): a column some patches set and others do not is set to itself
 * (`target.column`) where a patch leaves it alone.
 */
export function patchAssignments(sets: Record<string, unknown>[], columns: string[]): string[] {
  return columns.map((column) =>
    sets.every((set) => column in set)
      ? `${column} = patched.${column}`
      : `${column} = CASE WHEN jsonb_exists(input.patch, '${column}') THEN patched.${column} ELSE target.${column} END`,
  );
}
