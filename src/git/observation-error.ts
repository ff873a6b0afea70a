/** The folder is not a usable Git repository (missing, not a work tree, or no Git directory found). */
export class GitObservationError extends Error {}
