/** Types of groups.mjs, which stays JavaScript so that stryker.config.mjs can import it as it is. */
export declare const mutationGroups: Record<'escrow' | 'text' | 'market' | 'access' | 'money-path' | 'claims', { mutate: string[]; tests: string[] }>;
