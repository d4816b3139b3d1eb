/** A UUID written in any letter case; ids are compared lower-cased everywhere. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (text: string) => uuidPattern.test(text);
