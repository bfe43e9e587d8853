import { InitialSchema1767225600000 } from './1767225600000-initial-schema';

/** Every migration of this release, oldest first. Readiness compares the database against this list. */
export const MIGRATIONS = [InitialSchema1767225600000];
