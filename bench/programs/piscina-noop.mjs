// Piscina worker for the pool benchmark's reference figure: a no-op task.
export default function noop(x) {
  return x;
}
