// Geometry helpers for a drawing program: points, boxes, polygons and hit tests.

function point(x, y) {
  return { x, y };
}

function distance(a, b) {
  const dx = a.x - b.x;
  const dy = a.y - b.y;
  return Math.sqrt(dx * dx + dy * dy);
}

function boundingBox(points) {
  if (points.length === 0) {
    return null;
  }
  let minX = points[0].x;
  let minY = points[0].y;
  let maxX = minX;
  let maxY = minY;
  for (const p of points) {
    minX = Math.min(minX, p.x);
    minY = Math.min(minY, p.y);
    maxX = Math.max(maxX, p.x);
    maxY = Math.max(maxY, p.y);
  }
  return { minX, minY, maxX, maxY };
}

function boxContains(box, p) {
  return p.x >= box.minX && p.x <= box.maxX && p.y >= box.minY && p.y <= box.maxY;
}

function polygonArea(points) {
  let twice = 0;
  for (let i = 0; i < points.length; i++) {
    const a = points[i];
    const b = points[(i + 1) % points.length];
    twice += a.x * b.y - b.x * a.y;
  }
  return Math.abs(twice) / 2;
}

function pointInPolygon(p, points) {
  let inside = false;
  for (let i = 0, j = points.length - 1; i < points.length; j = i++) {
    const a = points[i];
    const b = points[j];
    if ((a.y > p.y) !== (b.y > p.y) && p.x < ((b.x - a.x) * (p.y - a.y)) / (b.y - a.y) + a.x) {
      inside = !inside;
    }
  }
  return inside;
}

function centroid(points) {
  if (points.length === 0) {
    throw new Error('centroid of no points');
  }
  let sumX = 0;
  let sumY = 0;
  for (const p of points) {
    sumX += p.x;
    sumY += p.y;
  }
  return point(sumX / points.length, sumY / points.length);
}

function translate(points, dx, dy) {
  return points.map((p) => point(p.x + dx, p.y + dy));
}

function scale(points, factor, origin = point(0, 0)) {
  return points.map((p) => point(origin.x + (p.x - origin.x) * factor, origin.y + (p.y - origin.y) * factor));
}

function rotate(points, angle, origin = point(0, 0)) {
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  return points.map((p) => {
    const x = p.x - origin.x;
    const y = p.y - origin.y;
    return point(origin.x + x * cos - y * sin, origin.y + x * sin + y * cos);
  });
}

function perimeter(points) {
  let total = 0;
  for (let i = 0; i < points.length; i++) {
    total += distance(points[i], points[(i + 1) % points.length]);
  }
  return total;
}

function nearest(points, target) {
  let best = null;
  let bestDistance = Infinity;
  for (const p of points) {
    const d = distance(p, target);
    if (d < bestDistance) {
      best = p;
      bestDistance = d;
    }
  }
  return best;
}

class Canvas {
  constructor(width, height) {
    this.width = width;
    this.height = height;
    this.shapes = [];
  }

  add(name, points) {
    if (points.length < 3) {
      throw new Error(`${name} needs at least three points`);
    }
    this.shapes.push({ name, points });
    return this.shapes.length;
  }

  hit(p) {
    for (let i = this.shapes.length - 1; i >= 0; i--) {
      if (pointInPolygon(p, this.shapes[i].points)) {
        return this.shapes[i].name;
      }
    }
    return null;
  }

  totalArea() {
    let total = 0;
    for (const shape of this.shapes) {
      total += polygonArea(shape.points);
    }
    return total;
  }

  clip() {
    const frame = { minX: 0, minY: 0, maxX: this.width, maxY: this.height };
    this.shapes = this.shapes.filter((shape) => shape.points.every((p) => boxContains(frame, p)));
    return this.shapes.length;
  }
}

module.exports = { point, distance, boundingBox, polygonArea, pointInPolygon, centroid, translate, scale, rotate, perimeter, nearest, Canvas };
