/**
 * Wall-clock milliseconds (sub-millisecond resolution) comparable between processes of one
 * machine: a frame's arrival in a client process minus the trigger time another process took.
 */
export const wallClock = () => performance.timeOrigin + performance.now()
