// A time-series chart over uPlot (a small canvas chart library, bundled: nothing comes from a CDN). The
// series are given as columns; the chart is created once and fed new data as it arrives.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: number[];
  color: string;
}

export function TimeChart({ title, times, series }: { title: string; times: number[]; series: Series[] }) {
  const holder = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const shape = series.map((each) => `${each.label}:${each.color}`).join('|');

  useEffect(() => {
    const element = holder.current!;
    const width = () => Math.max(280, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 260,
        series: [{}, ...series.map((each) => ({ label: each.label, stroke: each.color, width: 2, points: { show: false } }))],
        axes: [{}, { size: 70 }],
        scales: { x: { time: true } },
      },
      [times, ...series.map((each) => each.values)],
      element,
    );
    chart.current = plot;
    const resize = () => plot.setSize({ width: width(), height: 260 });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      plot.destroy();
      chart.current = null;
    };
    // The chart is rebuilt only when the set of series changes; new numbers go through setData below.
  }, [shape]);

  useEffect(() => {
    chart.current?.setData([times, ...series.map((each) => each.values)]);
  }, [times, series]);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={holder} role="img" aria-label={`${title}: ${series.map((each) => `${each.label} ${each.values.reduce((sum, value) => sum + value, 0)} in all`).join(', ')}`} />
    </figure>
  );
}
