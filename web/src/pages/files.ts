// The file browser: list a directory, open text (edit and save) or images (blob: URLs),
// upload by the file input or drag-and-drop (with progress), download a file or a directory as
// a tar archive. Names and contents are text only: names go in text nodes, contents in a
// <textarea>'s value.
import { api, apiBlob, apiUpload, q } from '../api';
import { h, replace, bytes, errorText, Progress } from '../dom';

interface Entry {
  name: string;
  path: string;
  type: string;
  size: number;
  mtime: string;
}

const IMAGE = /\.(png|jpe?g|gif|webp|bmp|ico|svg)$/i;

function join(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : dir + '/' + name;
}

function parent(dir: string): string {
  const i = dir.replace(/\/+$/, '').lastIndexOf('/');
  return i <= 0 ? '/' : dir.slice(0, i);
}

function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function filesView(sandboxId: string, start: string): { el: HTMLElement; dispose: () => void } {
  const base = `/v1/sandboxes/${sandboxId}`;
  let dir = start;
  let objectUrl = '';
  const progress = new Progress();
  const crumb = h('span', { class: 'mono', id: 'files-path' });
  const list = h('tbody', { id: 'file-rows' });
  const viewer = h('div', { class: 'viewer', id: 'file-viewer' });
  const upload = h('input', { type: 'file', id: 'upload-input', multiple: true });
  const drop = h('div', { class: 'dropzone', id: 'dropzone' }, 'Drop files here to upload them into this directory');

  const dropUrl = () => {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = '';
  };

  async function uploadFiles(files: FileList | File[]): Promise<void> {
    for (const f of Array.from(files)) {
      const path = join(dir, f.name);
      try {
        await progress.run('uploading ' + f.name, () =>
          apiUpload(q(`${base}/files`, { path }), f, (x) => progress.fraction('uploading ' + f.name, x)),
        );
      } catch {
        /* shown */
      }
    }
    await load(dir);
  }

  async function open(e: Entry): Promise<void> {
    dropUrl();
    replace(viewer, h('p', { class: 'muted' }, 'loading ' + e.name + '…'));
    let blob: Blob;
    try {
      blob = await apiBlob(q(`${base}/files`, { path: e.path }));
    } catch (x) {
      replace(viewer, h('p', { class: 'error' }, errorText(x)));
      return;
    }
    const title = h('h3', { class: 'mono', id: 'viewer-name' }, e.path);
    const dl = h('button', { onclick: () => saveBlob(blob, e.name) }, 'Download');
    if (IMAGE.test(e.name)) {
      // An <img> of a blob: URL: an SVG's scripts never run there.
      const typed = new Blob([blob], { type: e.name.toLowerCase().endsWith('.svg') ? 'image/svg+xml' : 'image/*' });
      objectUrl = URL.createObjectURL(typed);
      replace(viewer, title, dl, h('img', { src: objectUrl, alt: e.name, id: 'viewer-image' }));
      return;
    }
    const text = await blob.text();
    const area = h('textarea', { id: 'editor', spellcheck: 'false', rows: '20' });
    area.value = text;
    const save = h(
      'button',
      {
        id: 'save',
        onclick: () =>
          progress
            .run('saving ' + e.name, () => apiUpload(q(`${base}/files`, { path: e.path }), area.value, () => {}))
            .then(() => load(dir), () => {}),
      },
      'Save',
    );
    replace(viewer, title, h('div', { class: 'toolbar' }, save, dl), area);
  }

  const row = (e: Entry) =>
    h(
      'tr',
      { 'data-name': e.name },
      h(
        'td',
        {},
        h(
          'a',
          {
            href: '#',
            class: 'file-name mono',
            onclick: (ev: Event) => {
              ev.preventDefault();
              if (e.type === 'dir' || e.type === 'directory') void load(e.path);
              else void open(e);
            },
          },
          e.name + (e.type === 'dir' || e.type === 'directory' ? '/' : ''),
        ),
      ),
      h('td', {}, e.type),
      h('td', { class: 'num' }, e.type === 'file' ? bytes(e.size) : ''),
      h('td', {}, e.mtime ? new Date(e.mtime).toLocaleString() : ''),
      h(
        'td',
        { class: 'actions' },
        h(
          'button',
          {
            class: 'danger',
            onclick: () =>
              progress
                .run('deleting ' + e.name, () => api('DELETE', q(`${base}/files`, { path: e.path, recursive: 'true' })))
                .then(() => load(dir), () => {}),
          },
          'Delete',
        ),
      ),
    );

  async function load(path: string): Promise<void> {
    try {
      const r = await api<{ path: string; entries: Entry[] }>('GET', q(`${base}/files/list`, { path }));
      dir = r.path || path;
      replace(crumb, dir);
      const entries = [...r.entries].sort((a, b) =>
        a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'dir' || a.type === 'directory' ? -1 : 1,
      );
      replace(
        list,
        dir !== '/' && dir !== start
          ? h('tr', {}, h('td', {}, h('a', { href: '#', class: 'mono', onclick: (ev: Event) => (ev.preventDefault(), void load(parent(dir))) }, '../')))
          : null,
        entries.map(row),
      );
    } catch (e) {
      progress.fail('could not list ' + path + ': ' + errorText(e));
    }
  }

  upload.addEventListener('change', () => {
    if (upload.files?.length) void uploadFiles(upload.files).then(() => (upload.value = ''));
  });
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer?.files.length) void uploadFiles(e.dataTransfer.files);
  });

  const newName = h('input', { type: 'text', id: 'new-file-name', placeholder: 'new-file.txt' });
  const el = h(
    'div',
    { class: 'files' },
    progress.el,
    h(
      'div',
      { class: 'toolbar' },
      crumb,
      h('button', { onclick: () => void load(dir) }, 'Refresh'),
      h(
        'button',
        {
          id: 'download-dir',
          onclick: () =>
            progress
              .run('archiving ' + dir, () => apiBlob(q(`${base}/archive`, { path: dir })))
              .then((b) => saveBlob(b, (dir.split('/').filter(Boolean).pop() || 'root') + '.tar'), () => {}),
        },
        'Download directory (.tar)',
      ),
      h('label', { class: 'button' }, 'Upload', upload),
      newName,
      h(
        'button',
        {
          id: 'new-file',
          onclick: () => {
            const n = newName.value.trim();
            if (!n) return;
            void progress
              .run('creating ' + n, () => apiUpload(q(`${base}/files`, { path: join(dir, n) }), '', () => {}))
              .then(() => load(dir).then(() => open({ name: n, path: join(dir, n), type: 'file', size: 0, mtime: '' })), () => {});
          },
        },
        'New file',
      ),
    ),
    drop,
    h('div', { class: 'split' }, h('table', { id: 'files' }, h('thead', {}, h('tr', {}, ['Name', 'Type', 'Size', 'Modified', ''].map((t) => h('th', {}, t)))), list), viewer),
  );
  void load(dir);
  return { el, dispose: dropUrl };
}
