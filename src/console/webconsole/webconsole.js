// The browser side of an HCP webconsole: noVNC connected to HCP's console proxy for this page's session.
// The single-use token arrives in the URL fragment, which browsers never send to a server.
import RFB from './novnc/core/rfb.js';

const status = document.getElementById('status');
function show(state, text) {
  status.dataset.state = state;
  status.textContent = text;
}

const sessionId = location.pathname.split('/').filter(Boolean).pop();
const token = new URLSearchParams(location.hash.slice(1)).get('token');
// The token is spent on first use; keep it out of the address bar and the history all the same.
history.replaceState(null, '', location.pathname);

if (!token) {
  show('failed', 'this link carries no console token; open a new console session');
} else {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${scheme}//${location.host}/v1/console/${encodeURIComponent(sessionId)}/websocket?token=${encodeURIComponent(token)}`;
  const rfb = new RFB(document.getElementById('screen'), url, { wsProtocols: ['binary'] });
  rfb.scaleViewport = true;
  rfb.addEventListener('connect', () => show('connected', 'connected'));
  rfb.addEventListener('desktopname', (e) => (document.title = `${e.detail.name} · HCP console`));
  rfb.addEventListener('securityfailure', (e) => show('failed', `refused: ${e.detail.reason || 'security failure'}`));
  rfb.addEventListener('disconnect', (e) =>
    show(
      status.dataset.state === 'connected' && e.detail.clean ? 'disconnected' : 'failed',
      e.detail.clean ? 'disconnected' : 'connection failed or lost',
    ),
  );
}
