/**
 * A child of the launcher leaves SIGINT to it. Ctrl-C in a terminal reaches every process of the group:
 * the children would start stopping on it, and the SIGTERM the launcher forwards next would be a second
 * signal, which ends a draining process at once. The launcher turns one Ctrl-C into one SIGTERM each.
 */
// A listener of our own first: without one, SIGINT's default action would kill the child.
const ignore = (): void => undefined;
process.on('SIGINT', ignore);
process.on('newListener', (event, listener) => {
  if (event === 'SIGINT' && listener !== ignore)
    setImmediate(() => process.removeListener('SIGINT', listener as () => void));
});
