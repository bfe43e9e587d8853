import {
  SoapEncodingError,
  localizedFault,
  moref,
  parseSoapAnswer,
  requestEnvelope,
  typed,
  xsdString,
} from './soap-envelope';
import { extraConfigOf, guestAddressesOf } from './vsphere-inventory';

const ENVELOPE = (body: string) =>
  '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" ' +
  'xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
  `<soapenv:Body>${body}</soapenv:Body></soapenv:Envelope>`;

describe('vim25 request envelopes', () => {
  it('writes the method on its _this, then the arguments in the order given', () => {
    const xml = requestEnvelope('CloneVM_Task', moref('VirtualMachine', 'vm-42'), {
      folder: moref('Folder', 'group-v3'),
      name: 'hcp-1',
      spec: { template: false, config: { numCPUs: 2, memoryMB: 2048 }, powerOn: false },
    });
    expect(xml).toContain(
      '<CloneVM_Task xmlns="urn:vim25"><_this type="VirtualMachine">vm-42</_this><folder type="Folder">group-v3</folder>' +
        '<name>hcp-1</name><spec><template>false</template><config><numCPUs>2</numCPUs><memoryMB>2048</memoryMB></config>' +
        '<powerOn>false</powerOn></spec></CloneVM_Task>',
    );
  });

  it('escapes text so a name or tag cannot change the document', () => {
    const xml = requestEnvelope('X', moref('VirtualMachine', 'vm-1'), {
      name: `</name><evil a="1">&'`,
    });
    expect(xml).toContain('<name>&lt;/name&gt;&lt;evil a=&quot;1&quot;&gt;&amp;&apos;</name>');
    // What was written parses back to the same text.
    const echoed = parseSoapAnswer(
      ENVELOPE(
        `<XResponse xmlns="urn:vim25"><returnval>${xml.match(/<name>(.*)<\/name>/)![1]}</returnval></XResponse>`,
      ),
      'X',
    );
    expect(echoed).toEqual({ kind: 'result', returnval: `</name><evil a="1">&'` });
  });

  it('writes polymorphic values with xsi:type, repeats arrays and leaves out absent fields', () => {
    const xml = requestEnvelope('ReconfigVM_Task', moref('VirtualMachine', 'vm-1'), {
      spec: {
        annotation: undefined,
        extraConfig: [
          typed('OptionValue', { key: 'hcp.id', value: xsdString('a<b') }),
          typed('OptionValue', { key: 'hcp.tag.x', value: xsdString('') }),
        ],
      },
    });
    expect(xml).toContain(
      '<spec><extraConfig xsi:type="OptionValue"><key>hcp.id</key><value xsi:type="xsd:string">a&lt;b</value></extraConfig>' +
        '<extraConfig xsi:type="OptionValue"><key>hcp.tag.x</key><value xsi:type="xsd:string"></value></extraConfig></spec>',
    );
  });

  it('refuses characters XML cannot carry and element names that are not names', () => {
    expect(() => requestEnvelope('X', moref('VirtualMachine', 'vm-1'), { name: 'a\u0001b' })).toThrow(
      SoapEncodingError,
    );
    expect(() => requestEnvelope('X', moref('VirtualMachine', 'vm-1'), { 'a b': 'x' })).toThrow(SoapEncodingError);
    expect(() => requestEnvelope('X', moref('VirtualMachine', 'vm-1'), { n: Number.NaN })).toThrow(SoapEncodingError);
  });
});

describe('vim25 answers', () => {
  it('reads a MoRef result and a void result', () => {
    const task = parseSoapAnswer(
      ENVELOPE(
        '<PowerOnVM_TaskResponse xmlns="urn:vim25"><returnval type="Task">task-7</returnval></PowerOnVM_TaskResponse>',
      ),
      'PowerOnVM_Task',
    );
    expect(task).toEqual({ kind: 'result', returnval: { '#text': 'task-7', '@_type': 'Task' } });
    expect(
      parseSoapAnswer(ENVELOPE('<ShutdownGuestResponse xmlns="urn:vim25"></ShutdownGuestResponse>'), 'ShutdownGuest'),
    ).toEqual({
      kind: 'result',
      returnval: undefined,
    });
  });

  it('reads a fault type from the detail xsi:type, whatever prefix the server bound to XMLSchema-instance', () => {
    const answer = parseSoapAnswer(
      ENVELOPE(
        '<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>The session is not authenticated.</faultstring>' +
          '<detail><NotAuthenticatedFault xmlns="urn:vim25" xmlns:_XMLSchema-instance="http://www.w3.org/2001/XMLSchema-instance" ' +
          '_XMLSchema-instance:type="NotAuthenticated"><object type="Folder">group-d1</object><privilegeId>System.View</privilegeId>' +
          '</NotAuthenticatedFault></detail></soapenv:Fault>',
      ),
      'RetrievePropertiesEx',
    );
    expect(answer.kind).toBe('fault');
    if (answer.kind === 'fault') {
      expect(answer.fault.type).toBe('NotAuthenticated');
      expect(answer.fault.message).toBe('The session is not authenticated.');
    }
  });

  it('takes the fault type from the detail element name when it has no xsi:type', () => {
    const answer = parseSoapAnswer(
      ENVELOPE(
        '<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>Cannot complete login</faultstring>' +
          '<detail><InvalidLoginFault xmlns="urn:vim25"></InvalidLoginFault></detail></soapenv:Fault>',
      ),
      'Login',
    );
    expect(answer).toMatchObject({ kind: 'fault', fault: { type: 'InvalidLogin' } });
  });

  it('reads a failed task error (LocalizedMethodFault)', () => {
    const fault = localizedFault({
      fault: { '@_xsi:type': 'InvalidDatastore', name: 'LocalDS_9' },
      localizedMessage: 'Invalid datastore',
    });
    expect(fault).toMatchObject({ type: 'InvalidDatastore', message: 'Invalid datastore' });
  });

  it('refuses what is not a SOAP answer for the method', () => {
    expect(() => parseSoapAnswer('<html>bad gateway</html>', 'Login')).toThrow(/SOAP envelope/);
    expect(() => parseSoapAnswer(ENVELOPE('<OtherResponse/>'), 'Login')).toThrow(/LoginResponse/);
  });

  it('reads extraConfig strings (numeric character references decoded) and guest IPs per NIC', () => {
    const xml = ENVELOPE(
      '<RetrievePropertiesExResponse xmlns="urn:vim25"><returnval><objects><obj type="VirtualMachine">vm-1</obj>' +
        '<propSet><name>config.extraConfig</name><val xmlns:x="http://www.w3.org/2001/XMLSchema-instance" x:type="ArrayOfOptionValue">' +
        '<OptionValue x:type="OptionValue"><key>hcp.id</key><value x:type="xsd:string">vm-abc</value></OptionValue>' +
        '<OptionValue x:type="OptionValue"><key>hcp.tag.a</key><value x:type="xsd:string">&#34;x &amp; y&#34;</value></OptionValue>' +
        '<OptionValue x:type="OptionValue"><key>numeric</key><value x:type="xsd:int">3</value></OptionValue>' +
        '</val></propSet>' +
        '<propSet><name>guest.net</name><val x:type="ArrayOfGuestNicInfo" xmlns:x="http://www.w3.org/2001/XMLSchema-instance">' +
        '<GuestNicInfo><network>VM Network</network><ipAddress>10.0.0.5</ipAddress><ipAddress>fe80::1</ipAddress>' +
        '<ipAddress>2001:db8::5</ipAddress><deviceConfigId>4000</deviceConfigId></GuestNicInfo>' +
        '<GuestNicInfo><ipAddress>127.0.0.1</ipAddress><deviceConfigId>4001</deviceConfigId></GuestNicInfo>' +
        '</val></propSet></objects></returnval></RetrievePropertiesExResponse>',
    );
    const answer = parseSoapAnswer(xml, 'RetrievePropertiesEx');
    if (answer.kind !== 'result') throw new Error('expected a result');
    const props = (answer.returnval as any).objects.propSet as Array<{ name: string; val: unknown }>;
    expect(extraConfigOf(props[0]!.val)).toEqual({ 'hcp.id': 'vm-abc', 'hcp.tag.a': '"x & y"' });
    expect(guestAddressesOf(props[1]!.val)).toEqual([
      { type: 'ipv4', address: '10.0.0.5', nic: 'VM Network' },
      { type: 'ipv6', address: '2001:db8::5', nic: 'VM Network' },
    ]);
  });
});
